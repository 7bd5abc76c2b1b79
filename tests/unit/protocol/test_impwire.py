"""A guest's shell description as JSON: what job-exec encodes the helper decodes as it was;
anything else is refused naming the field."""

from __future__ import annotations

import json
import marshal
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.exec.plan import plan
from pflux.protocol.impwire import (
    DescriptionError,
    decode_description,
    encode_description,
    spawn_as,
    split_request,
)
from pflux.protocol.shellwire import Description
from pflux.spec.builder import from_command
from pflux.spec.idset import IdSet
from pflux.spec.resource import ResourceSet

R = ResourceSet.build({0: (IdSet.decode("0-3"), IdSet())}, "h").to_json()
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


def planned(command: list[str], env: dict[str, str], ntasks: int) -> Description:
    jobspec = from_command(command, environment=env, num_tasks=ntasks)
    jobspec["attributes"]["system"]["files"] = {"f": {"data": "AAE=", "encoding": "base64"}}
    shells = plan(
        7, jobspec, R, uri="local:///x", namespace="job-7", tmp_parents=("/t",),
        hostname="h", cpus=(0, 1, 2, 3),
    ).shells  # fmt: skip
    return Description(*marshal.loads(shells[0][1]))


@settings(max_examples=50, deadline=None)
@given(
    st.lists(text.filter(bool), min_size=1, max_size=3),
    st.dictionaries(text, text, max_size=4),
    st.integers(1, 4),
)
def test_a_description_comes_back_as_it_went(
    command: list[str], env: dict[str, str], ntasks: int
) -> None:
    description = planned(command, env, ntasks)
    assert decode_description(encode_description(description)) == description


def test_a_path_that_is_not_utf8_comes_back_as_it_went() -> None:
    description = planned(["true"], {}, 1)
    fields = dict(zip(Description._fields, description, strict=True))
    odd = Description(**{**fields, "cwd": os.fsdecode(b"/home/\xff"), "tmpdirs": ("/t\udcfe",)})
    assert decode_description(encode_description(odd)) == odd
    fields = json.loads(encode_description(odd))
    with pytest.raises(DescriptionError, match="description: tmpdirs: wrong type or shape"):
        decode_description(json.dumps({**fields, "tmpdirs": [1]}).encode())


def test_a_request_splits_into_its_lines() -> None:
    payload = b"local:///r1\n" + spawn_as(1002, "HEADER.PAYLOAD.SIG", b'{"a": 1}\n')
    assert split_request(payload) == ("local:///r1", "1002", "HEADER.PAYLOAD.SIG", b'{"a": 1}\n')
    with pytest.raises(DescriptionError, match="URI, userid and J lines"):
        split_request(b"just one line")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("argv", []),
        ("argv", "sh"),
        ("env", {"A": 1}),
        ("tasks", [[0, 0, "x", None]]),
        ("cwd", 3),
        ("stdout", [["a"], "yes", False]),
        ("pmi", [2, [[0, 1]]]),
        ("rlimit", [[7]]),
        ("exit_timeout", True),
        ("task_env", [{"A": None}]),
        ("ptys", ["0"]),
        ("files", [["f", "not base64!", 384]]),
        ("files", [["f", "AAE=", True]]),
        ("tasks", []),
        ("tasks", [[0, 0, None]]),
        ("tmpdirs", "/t"),
        ("host", None),
        ("stdin", ["/dev/null"]),
        ("stderr", [["a"], False]),
        ("pmi", [2, [[0, 1, 2, True]]]),
        ("rlimit", [[7, 1.5]]),
        ("exit_timeout", "5"),
        ("exit_on_error", 1),
        ("tmpdir_env", [None]),
        ("ptys", [True]),
        ("nosetpgrp", None),
        ("tmpdir_argv", "no"),
    ],
)
def test_a_field_of_the_wrong_shape_is_refused_naming_it(field: str, value: object) -> None:
    fields = json.loads(encode_description(planned(["true"], {}, 1)))
    fields[field] = value
    with pytest.raises(DescriptionError, match=f"description: {field}: wrong type or shape"):
        decode_description(json.dumps(fields).encode())


def test_not_json_or_missing_fields_is_refused() -> None:
    with pytest.raises(DescriptionError, match="not JSON"):
        decode_description(b"\x80marshal")
    with pytest.raises(DescriptionError, match="must be an object of"):
        decode_description(b'{"argv": ["true"]}')
    with pytest.raises(DescriptionError, match="must be an object of"):
        decode_description(b'[["true"]]')
    fields = json.loads(encode_description(planned(["true"], {}, 1)))
    with pytest.raises(DescriptionError, match=r"must be an object of .* unknown field `more`"):
        decode_description(json.dumps({**fields, "more": 1}).encode())
