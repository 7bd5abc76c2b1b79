"""A live pflux instance for end-to-end tests, and the CLI run against it.

``LiveInstance`` runs ``pflux start --state-dir DIR`` with an initial program
that prints the URI and then waits for its stdin to close, so a test holds the
instance open exactly as long as it needs, and can also SIGKILL it. ``pflux``
runs a command in this process (fast) or through the console script
(``console``); ``held`` and ``quiesce`` set up and clear jobs through the API.
"""

from __future__ import annotations

import contextlib
import io
import os
import select
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

from pflux.cli import main

if TYPE_CHECKING:
    from pflux.api import Client
    from pflux.spec.fluid import JobID

PFLUX = Path(sys.executable).with_name("pflux")
WAIT_ON_STDIN = ("sh", "-c", 'echo "$PFLUX_URI"; exec cat >/dev/null')


class LiveInstance:
    """``pflux start`` in a subprocess; ``uri`` once it is ready."""

    def __init__(
        self, state_dir: Path, *args: str, cores: int | None = 4, prefix: Sequence[str] = ()
    ) -> None:
        """``cores`` None: the resources come from ``args`` (``--config``); ``prefix``
        runs it through another command (``tests.support.netns``: on another host)."""
        self.state_dir = state_dir
        self.log = state_dir.parent / f"{state_dir.name}.log"
        counts = ["--cores", str(cores)] if cores is not None else []
        with self.log.open("a") as log:
            self.proc = subprocess.Popen(
                [
                    *prefix,
                    str(PFLUX),
                    "start",
                    "--state-dir",
                    str(state_dir),
                    *counts,
                    *args,
                    *WAIT_ON_STDIN,
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                start_new_session=True,
            )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("local://"):
            self.proc.kill()
            raise RuntimeError(f"instance did not start:\n{self.log.read_text()}")
        self.uri = line

    def stop(self) -> int:
        """Close the initial program's stdin: the instance shuts down cleanly."""
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()
        rc = self.proc.wait(timeout=60)
        self._close()
        return rc

    def _close(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(BrokenPipeError):
                    stream.close()

    def kill(self) -> None:
        """SIGKILL the broker alone, as a crash would."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)
        self._close()
        # the initial program is left; end it too (it is not part of the instance's state)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def __enter__(self) -> LiveInstance:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.stop()


def start_with_config(where: Path, toml: str, *command: str) -> subprocess.CompletedProcess[str]:
    """``pflux start --config FILE COMMAND`` (default ``true``), FILE holding ``toml``."""
    config = where / "instance.toml"
    config.write_text(toml)
    return subprocess.run(
        [str(PFLUX), "start", "--config", str(config), *(command or ("true",))],
        capture_output=True,
        text=True,
        env=environ(),
        timeout=60,
        check=False,
    )


def environ(**overrides: str) -> dict[str, str]:
    """This process's environment for a pflux command: ids print with ƒ, streams are UTF-8."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("F58_FORCE_ASCII")}
    env["PYTHONIOENCODING"] = "utf-8"
    env.update(overrides)
    return env


def console(*args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    """The real ``pflux`` script in ``environ(**env)``, fed ``stdin`` (never the runner's)."""
    return subprocess.run(
        [str(PFLUX), *args],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=environ(**env),
        timeout=60,
        check=False,
    )


def pflux(
    uri: str, *args: str, stdin: str | None = None, script: bool = False
) -> subprocess.CompletedProcess[str]:
    """``pflux ARGS`` in this process (fast), or with ``stdin``/``script`` the console script."""
    if stdin is not None or script:
        return console(*args, stdin=stdin or "", PFLUX_URI=uri)
    # UTF-8 streams, as the console script has, so that ids print with ƒ
    out = io.TextIOWrapper(io.BytesIO(), "utf-8", write_through=True)
    err = io.TextIOWrapper(io.BytesIO(), "utf-8", write_through=True)
    with (
        mock.patch.dict(os.environ, environ(PFLUX_URI=uri), clear=True),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            rc = main(list(args))
        except SystemExit as exc:  # argparse's usage errors
            rc = exc.code if isinstance(exc.code, int) else 2
    texts = [stream.buffer.getvalue().decode() for stream in (out, err)]
    return subprocess.CompletedProcess(args, rc, *texts)


def ok(uri: str, *args: str, stdin: str | None = None, script: bool = False) -> str:
    proc = pflux(uri, *args, stdin=stdin, script=script)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def fails(uri: str, *args: str, rc: int = 1, script: bool = False) -> str:
    """The error output of a command that must fail with ``rc``."""
    proc = pflux(uri, *args, script=script)
    assert proc.returncode == rc, (proc.stdout, proc.stderr)
    return proc.stderr


def jobspec(
    run_duration: str = "0.01s", *, cores: int = 1, command: Sequence[str] = ("true",), **test: Any
) -> dict[str, Any]:
    """A test-mode jobspec: no process; it 'runs' for ``run_duration`` (0: until killed)."""
    return {
        "version": 1,
        "resources": [
            {
                "type": "slot",
                "count": 1,
                "label": "task",
                "with": [{"type": "core", "count": cores}],
            }
        ],
        "tasks": [{"command": list(command), "slot": "task", "count": {"per_slot": 1}}],
        "attributes": {
            "system": {"duration": 0, "exec": {"test": {"run_duration": run_duration, **test}}}
        },
    }


def held(client: Client) -> JobID:
    """A job that stays pending (urgency 0) until its urgency is raised or it is canceled."""
    jobid = client.submit(jobspec(), urgency="hold")
    client.wait_event(jobid, "priority")
    return jobid


def quiesce(client: Client) -> None:
    """Cancel whatever earlier tests left active and wait until nothing is."""
    client.raise_all("cancel", note="test cleanup")
    client.drain()


def read_fifo(path: Path, timeout: float = 30) -> str:
    """What the first writer of a FIFO writes (waiting for it with select, not polling)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        assert ready, f"nothing written to {path} in {timeout} s"
        return os.read(fd, 4096).decode().strip()
    finally:
        os.close(fd)


def wait_exit(pids: list[int], timeout: float = 30.0) -> None:
    """Wait until every process has ended (on pidfds: they are not our children)."""
    fds = []
    for pid in pids:
        try:
            fds.append(os.pidfd_open(pid))
        except ProcessLookupError:
            continue
    try:
        for fd in fds:
            assert select.select([fd], [], [], timeout)[0], "a process did not end"
    finally:
        for fd in fds:
            os.close(fd)


def wait_for_log(uri: str, text: str, after: int = 0) -> None:
    """Follow the instance's log until a line holds ``text``, past ``after`` such lines."""
    with subprocess.Popen(
        [str(PFLUX), "dmesg", "-f"], stdout=subprocess.PIPE, text=True,
        env=environ(PFLUX_URI=uri),
    ) as follower:  # fmt: skip
        assert follower.stdout is not None
        seen = 0
        for line in follower.stdout:
            if text in line:
                seen += 1
                if seen > after:
                    break
        follower.kill()
    assert seen > after, f"the log ended before {text!r}"
