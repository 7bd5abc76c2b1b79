"""Another user against a job's output file in a directory anyone may write in.

The attacker puts a link (to a file of root's) or a file of its own, open to
all, under the name root's job will write its output to: the job must neither
write through the link nor hand its output to the attacker's file.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from support.instance import PFLUX, LiveInstance, environ
from support.users import User

SECRET = "root's job output"


@pytest.mark.parametrize("planted", ["link", "file"])
def test_roots_job_does_not_write_through_what_another_user_planted(
    other_users: tuple[User, User], tmp_path: Path, planted: str
) -> None:
    _, attacker = other_users
    shared = attacker.home.parent / f"shared-{planted}"
    shared.mkdir()
    shared.chmod(0o1777)
    precious = tmp_path / "precious"
    precious.write_text("unchanged")
    out = shared / "out"
    if planted == "link":
        code = "import os, sys; os.symlink(sys.argv[2], sys.argv[1])"
    else:
        code = "import os, sys; open(sys.argv[1], 'w').close(); os.chmod(sys.argv[1], 0o666)"
    made = attacker.code(code, str(out), str(precious))
    assert made.returncode == 0, made.stderr
    with LiveInstance(tmp_path / "state") as live:
        ran = subprocess.run(
            [str(PFLUX), "run", f"--output={out}", "echo", SECRET],
            env=environ(PFLUX_URI=live.uri),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert ran.returncode == 1
    what = "link" if planted == "link" else "file"
    assert f"error opening output file {out}: another user's {what}" in ran.stderr
    assert precious.read_text() == "unchanged"
    if planted == "file":
        assert out.read_text() == ""


def test_start_log_filename_does_not_write_through_another_users_link(
    other_users: tuple[User, User], tmp_path: Path
) -> None:
    _, attacker = other_users
    shared = attacker.home.parent / "shared-log"
    shared.mkdir()
    shared.chmod(0o1777)
    precious = tmp_path / "precious"
    precious.write_text("unchanged")
    log = shared / "log"
    made = attacker.code(
        "import os, sys; os.symlink(sys.argv[2], sys.argv[1])", str(log), str(precious)
    )
    assert made.returncode == 0, made.stderr
    ran = subprocess.run(
        [str(PFLUX), "start", f"-Slog-filename={log}", "true"],
        env=environ(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 2
    assert f"-S log-filename={log}: another user's link in a directory anyone may write in" in (
        ran.stderr
    )
    assert precious.read_text() == "unchanged"
