"""The job shell's fatal errors as flux run shows them: a ``flux-shell[0]: FATAL:`` line,
then the job's exception, and flux's exit code (flux-core's t2602-job-shell)."""

from __future__ import annotations

import re
from pathlib import Path

from support.instance import LiveInstance, pflux


def test_a_missing_command_logs_a_fatal_error(instance: LiveInstance, tmp_path: Path) -> None:
    run = pflux(instance.uri, "run", "nosuchcommand")
    assert run.returncode == 127, run.stderr
    lines = run.stderr.splitlines()
    fatal = [
        i
        for i, line in enumerate(lines)
        if re.search(r"flux-shell\[0\]: FATAL: task 0.*: start failed", line)
    ]
    raised = [
        i
        for i, line in enumerate(lines)
        if re.search(r"job.exception .*type=exec severity=0 task 0.*: start failed", line)
    ]
    assert fatal, lines
    assert raised, lines
    assert fatal[0] < raised[0], lines
    assert "No such file or directory" in run.stderr
    (tmp_path / "adirectory").mkdir()
    illegal = pflux(instance.uri, "run", f"--cwd={tmp_path}", "./adirectory")
    assert illegal.returncode == 126, illegal.stderr
    assert re.search(r"flux-shell\[0\]: FATAL: task 0.*: start failed", illegal.stderr)
    assert "Permission denied" in illegal.stderr
