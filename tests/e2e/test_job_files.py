"""A jobspec's files (``attributes.system.files``, RFC 37) are in the job's
``FLUX_JOB_TMPDIR`` when its tasks start, with their modes and encodings, and
``{{tmpdir}}`` in the command names that directory, as flux-core's shell does."""

from __future__ import annotations

import base64
import json

from support.instance import fails, ok

FILES = {
    "script": {"mode": 0o100700, "encoding": "utf-8", "data": "#!/bin/sh\necho ran $1\n"},
    "blob": {"encoding": "base64", "data": base64.b64encode(b"\x00\xffok").decode()},
    "conf.json": {"mode": 0o100644, "data": {"a": [1, "two"]}},
    "sub/dir/note": {"encoding": "utf-8", "data": "deep"},
    "empty": {"mode": 0o40750},
    "link": {"mode": 0o120777, "data": "script"},
}


def test_the_files_are_written_before_the_tasks_start(uri: str) -> None:
    script = (
        '{{tmpdir}}/script arg; cd "$FLUX_JOB_TMPDIR";'
        " stat -c '%n %a' script blob conf.json sub/dir/note;"
        " od -An -c blob | tr -s ' '; cat conf.json; echo; cat sub/dir/note; echo;"
        " stat -c '%n %F %a' empty; readlink link"
    )
    out = ok(uri, "run", f"--setattr=files={json.dumps(FILES)}", "sh", "-c", script)
    lines = out.splitlines()
    assert lines[:5] == [
        "ran arg",
        "script 700",
        "blob 600",
        "conf.json 644",
        "sub/dir/note 600",
    ]
    assert lines[5].split() == ["\\0", "377", "o", "k"]
    assert json.loads(lines[6]) == {"a": [1, "two"]}
    assert lines[7:] == ["deep", "empty directory 750", "script"]


def test_the_command_names_the_tmpdir(uri: str) -> None:
    files = {"hello": {"mode": 0o100755, "encoding": "utf-8", "data": "#!/bin/sh\necho hi\n"}}
    out = ok(uri, "run", f"--setattr=files={json.dumps(files)}", "{{tmpdir}}/hello")
    assert out == "hi\n"


def test_a_file_that_cannot_be_decoded_is_the_jobs_exception(uri: str) -> None:
    files = {"../escape": {"encoding": "utf-8", "data": "x"}}
    err = fails(uri, "run", f"--setattr=files={json.dumps(files)}", "true")
    assert "files: '../escape': must be a relative path without '.' or '..'" in err
    files = {"bad": {"encoding": "rot13", "data": "x"}}
    err = fails(uri, "run", f"--setattr=files={json.dumps(files)}", "true")
    assert "files: bad: encoding must be utf-8 or base64, got 'rot13'" in err
    files = {"fifo": {"mode": 0o10600, "data": ""}}
    err = fails(uri, "run", f"--setattr=files={json.dumps(files)}", "true")
    assert "files: fifo: mode 10600 is not a file, directory or link" in err
