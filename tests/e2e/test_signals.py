"""Signals end to end: ``pflux job kill`` reaches every task, ``pflux cancel`` escalates.

The instance is configured with a short grace period (``[exec] kill-timeout``)
so that a task ignoring SIGTERM is SIGKILLed quickly, and the test can tell
the configured grace from the default 5 s. Tasks report what they catch on
stdout; the tests read the job's output eventlog as it grows, so every step
waits for an event rather than sleeping.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pflux.api import Client, jobspec_of
from pflux.spec.fluid import JobID
from support.instance import PFLUX, LiveInstance, environ, fails, ok

GRACE = 0.5


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveInstance]:
    base = tmp_path_factory.mktemp("signals")
    config = base / "config.toml"
    config.write_text(f"[exec]\nkill-timeout = {GRACE}\n")
    with LiveInstance(base / "state", "--config", str(config)) as live:
        yield live


def shell_job(script: str, ntasks: int = 1) -> dict[str, Any]:
    return jobspec_of(["sh", "-c", script], num_tasks=ntasks, environment={"PATH": "/usr/bin:/bin"})


class Output:
    """A job's stdout lines, read from its output eventlog as they are committed."""

    def __init__(self, client: Client, jobid: JobID) -> None:
        self.events = client.events(jobid, path="guest.output")
        self.lines: list[str] = []

    def until(self, count: int, prefix: str) -> list[str]:
        """Read until ``count`` lines start with ``prefix``; return those lines."""
        while len(matching := [x for x in self.lines if x.startswith(prefix)]) < count:
            event = next(self.events)
            data = (event.context or {}).get("data")
            if event.name == "data" and isinstance(data, str):
                self.lines.extend(data.splitlines())
        return sorted(matching)


# trap-and-report tasks: USR1 is counted, TERM ends the task with exit code 7
REPORTER = (
    "trap 'echo \"usr1 $FLUX_TASK_RANK\"' USR1; "
    "trap 'echo \"term $FLUX_TASK_RANK\"; exit 7' TERM; "
    'echo "ready $FLUX_TASK_RANK"; '
    "while :; do sleep 60 & wait $!; done"
)


def test_job_kill_reaches_every_task_by_name_number_or_default(uri: str, client: Client) -> None:
    jobid = client.submit(shell_job(REPORTER, ntasks=3))
    out = Output(client, jobid)
    assert out.until(3, "ready") == ["ready 0", "ready 1", "ready 2"]
    for count, sig in enumerate(("USR1", "SIGUSR1", str(int(signal.SIGUSR1))), 1):
        ok(uri, "job", "kill", "-s", sig, str(jobid))
        assert out.until(3 * count, "usr1") == sorted(
            f"usr1 {rank}" for rank in range(3) for _ in range(count)
        )
    ok(uri, "job", "kill", str(jobid))  # SIGTERM, the default
    assert out.until(3, "term") == ["term 0", "term 1", "term 2"]
    finish = client.wait_event(jobid, "finish")
    assert finish.context == {"status": 7 << 8}
    assert not client.wait(jobid).success


def test_job_kill_errors(uri: str, client: Client) -> None:
    pending = client.submit(shell_job("true"), urgency="hold")
    assert f"job {pending} is not running" in fails(uri, "job", "kill", str(pending))
    assert fails(uri, "job", "kill", "-s", "SIGNOPE", str(pending)) == (
        "pflux-job: ERROR: kill: Invalid signal SIGNOPE\n"
    )
    assert "Invalid signal -3" in fails(uri, "job", "kill", "-s", "-3", str(pending))
    running = client.submit(shell_job("exec sleep 60"))
    client.wait_event(running, "start")
    err = fails(uri, "job", "kill", "-s", "99", str(running))
    assert err == f"pflux-job: ERROR: {running.f58}: job-manager.kill: signum: expected int <= 64\n"
    client.cancel(pending)
    client.cancel(running)
    client.wait(pending)
    assert f"job {pending} is inactive" in fails(uri, "job", "kill", str(pending))
    assert "not found" in fails(uri, "job", "kill", "ƒ2")


def test_cancel_sends_sigterm_to_every_task(uri: str, client: Client) -> None:
    jobid = client.submit(shell_job("exec sleep 60", ntasks=2))
    client.wait_event(jobid, "start")
    ok(uri, "cancel", str(jobid))
    finish = client.wait_event(jobid, "finish")
    assert finish.context == {"status": (128 + signal.SIGTERM) << 8}  # not SIGKILL


def test_cancel_sigkills_tasks_that_ignore_sigterm_after_the_grace_period(
    uri: str, client: Client
) -> None:
    script = "trap '' TERM; echo ready $FLUX_TASK_RANK; exec sleep 60"  # sleep inherits the ignore
    jobid = client.submit(shell_job(script, ntasks=2))
    assert Output(client, jobid).until(2, "ready") == ["ready 0", "ready 1"]
    ok(uri, "cancel", str(jobid))
    exception = client.wait_event(jobid, "exception")
    finish = client.wait_event(jobid, "finish")
    assert finish.context == {"status": (128 + signal.SIGKILL) << 8}
    # the configured grace, not the default 5 s
    assert GRACE <= finish.timestamp - exception.timestamp < 4


def _ignore_some() -> None:
    """What ``nohup`` does to what it starts, and more."""
    for signum in (signal.SIGHUP, signal.SIGINT, signal.SIGUSR1, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)


def test_a_task_starts_with_no_signal_ignored_by_whoever_started_the_instance(
    tmp_path: Path,
) -> None:
    """A signal the instance's starter ignored (an instance under ``nohup``) is not
    ignored in a task, where a shell script could not even trap it."""
    command = [str(PFLUX), "start", str(PFLUX), "run", "grep", "^Sig", "/proc/self/status"]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        env=environ(),
        cwd=tmp_path,
        preexec_fn=_ignore_some,
        timeout=120,
        check=True,
    )
    fields = dict(line.split(":\t") for line in done.stdout.splitlines())
    catchable = sum(1 << (signum - 1) for signum in signal.valid_signals())  # not libc's own
    assert int(fields["SigIgn"], 16) & catchable == 0, done.stdout
    assert int(fields["SigBlk"], 16) == 0, done.stdout
