"""The job shell's fatal errors as flux run shows them: a ``flux-shell[0]: FATAL:`` line,
stamped no later than the job's exception, and flux's exit code (flux-core's
t2602-job-shell). The two come from different eventlogs, printed as each is read (as
flux's attach does), so their order on stderr is not fixed; their times are."""

from __future__ import annotations

import re
from pathlib import Path

from support.instance import LiveInstance, pflux


def stamp(line: str) -> float:
    """The seconds since the job began that a line of ``run``'s stderr starts with."""
    found = re.match(r"(\d+\.\d+)s: ", line)
    assert found, line
    return float(found.group(1))


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
    assert stamp(lines[fatal[0]]) <= stamp(lines[raised[0]]), lines
    assert "No such file or directory" in run.stderr
    (tmp_path / "adirectory").mkdir()
    illegal = pflux(instance.uri, "run", f"--cwd={tmp_path}", "./adirectory")
    assert illegal.returncode == 126, illegal.stderr
    assert re.search(r"flux-shell\[0\]: FATAL: task 0.*: start failed", illegal.stderr)
    assert "Permission denied" in illegal.stderr


def test_attach_quiet_prints_none_of_the_shells_messages(
    instance: LiveInstance, tmp_path: Path
) -> None:
    failed = pflux(instance.uri, "submit", "nosuchcommand").stdout.strip()
    redirected = pflux(instance.uri, "submit", f"--output={tmp_path}/out", "true").stdout.strip()
    loud = pflux(instance.uri, "job", "attach", failed)
    assert "flux-shell[0]: FATAL:" in loud.stderr
    quiet = pflux(instance.uri, "job", "attach", "-q", failed)
    assert quiet.returncode == loud.returncode == 127
    assert "flux-shell" not in quiet.stderr
    assert "job.exception" in quiet.stderr
    loud = pflux(instance.uri, "job", "attach", redirected)
    assert f"0: stdout redirected to {tmp_path}/out" in loud.stderr
    quiet = pflux(instance.uri, "job", "attach", "--quiet", redirected)
    assert (quiet.returncode, quiet.stderr) == (0, "")
