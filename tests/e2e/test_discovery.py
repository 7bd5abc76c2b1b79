"""Finding and asking an instance: FLUX_URI, ``pflux uri``, ``getattr``, ``lsattr``,
``version``, ``uptime``, ``dmesg``, and ``pflux start`` with nothing to run.

The commands run against the suite's live instance (tests/conftest.py); the start
tests run instances of their own, one under a real pseudo-terminal.
"""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import socket
import subprocess
import time
from pathlib import Path

from pflux.api import Client
from support.instance import PFLUX, environ, fails, jobspec, ok

# ------------------------------------------------------------------ FLUX_URI


def test_job_env_has_flux_uri(uri: str) -> None:
    out = ok(uri, "run", "sh", "-c", 'echo "$FLUX_URI $PFLUX_URI"', script=True)
    assert out.split() == [uri, uri]


def test_initial_program_has_flux_uri() -> None:
    env = {k: v for k, v in environ().items() if not k.endswith("FLUX_URI")}
    proc = subprocess.run(
        [str(PFLUX), "start", "sh", "-c", 'echo "$FLUX_URI"; echo "$PFLUX_URI"'],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    flux_uri, pflux_uri = proc.stdout.split()
    assert flux_uri == pflux_uri
    assert flux_uri.startswith("local://")


def without_uri(**env: str) -> dict[str, str]:
    clean = {k: v for k, v in environ().items() if k not in ("PFLUX_URI", "FLUX_URI")}
    return {**clean, **env}


def run_env(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PFLUX), *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def test_client_finds_instance_in_flux_uri(uri: str) -> None:
    proc = run_env(without_uri(FLUX_URI=uri), "getattr", "size")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "1\n"


def test_pflux_uri_wins_over_flux_uri(uri: str, tmp_path: Path) -> None:
    proc = run_env(without_uri(PFLUX_URI=uri, FLUX_URI=f"local://{tmp_path}/none"), "uri")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == f"{uri}\n"


# ------------------------------------------------------------------ pflux uri


def test_uri_prints_this_instance(uri: str) -> None:
    assert ok(uri, "uri") == f"{uri}\n"


def test_uri_of_a_path_and_of_a_process(uri: str) -> None:
    path = uri.removeprefix("local://")
    assert ok(uri, "uri", path) == f"{uri}\n"
    # a process that says it runs once exec is done: until then its /proc environ is empty
    with subprocess.Popen(
        ["sh", "-c", "echo up; read x"],
        env=without_uri(FLUX_URI=uri),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    ) as proc:
        assert proc.stdin is not None
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"up\n"
        assert ok(uri, "uri", f"pid:{proc.pid}") == f"{uri}\n"
        proc.stdin.close()  # its read ends: it exits, and the with waits for it


def test_uri_of_a_job_that_is_not_running_is_refused(uri: str, client: Client) -> None:
    jobid = client.submit(jobspec())
    client.wait(jobid)
    err = fails(uri, "uri", jobid.f58)
    assert f"jobid {jobid.f58} is not running" in err
    assert "jobid 123 not found" in fails(uri, "uri", "jobid:123")
    assert "unsupported scheme 'slurm'" in fails(uri, "uri", "slurm:12", rc=2)


# ------------------------------------------------------------------ getattr, lsattr


def test_getattr(uri: str, instance: object) -> None:
    assert ok(uri, "getattr", "local-uri") == f"{uri}\n"
    assert ok(uri, "getattr", "size") == "1\n"
    assert ok(uri, "getattr", "instance-level") == "0\n"
    assert ok(uri, "getattr", "security.owner") == f"{os.getuid()}\n"
    statedir = uri.removeprefix("local://").removesuffix("/local")
    assert ok(uri, "getattr", "statedir") == f"{statedir}\n"
    assert int(ok(uri, "getattr", "broker.pid")) > 0


def test_getattr_unknown_names_it(uri: str) -> None:
    assert fails(uri, "getattr", "nosuch") == (
        "pflux-getattr: ERROR: nosuch: No such file or directory\n"
    )


def test_lsattr(uri: str) -> None:
    names = ok(uri, "lsattr").split()
    assert names == sorted(names)
    assert {"local-uri", "size", "rank", "version", "broker.starttime"} <= set(names)
    values = dict(line.split(None, 1) for line in ok(uri, "lsattr", "-v").splitlines())
    assert values["local-uri"] == uri


# ------------------------------------------------------------------ version, uptime


def test_version_prints_commands_and_broker(uri: str) -> None:
    from pflux import __version__

    out = ok(uri, "version")
    assert re.search(rf"^commands:\s+{re.escape(__version__)}$", out, re.M)
    assert re.search(rf"^broker:\s+{re.escape(__version__)}$", out, re.M)
    alone = run_env(without_uri(), "version")
    assert alone.returncode == 0
    assert "broker:" not in alone.stdout


def test_uptime(uri: str, client: Client) -> None:
    out = ok(uri, "uptime")
    assert re.fullmatch(
        r" \d\d:\d\d:\d\d run [0-9.e+]+[smhd],  owner \S+,  depth 0,  size 1\n", out
    ), out
    client.queue_start(False, "testing")
    try:
        assert ok(uri, "uptime").splitlines()[1] == "  scheduler stopped"
    finally:
        client.queue_start(True)


# ------------------------------------------------------------------ dmesg


ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(?:Z|[+-]\d\d:\d\d)"


def test_dmesg_prints_the_log_ring(uri: str) -> None:
    out = ok(uri, "dmesg")
    assert re.search(rf"^{ISO} broker\.info\[0\]: instance ready at {re.escape(uri)}$", out, re.M)


def test_dmesg_human(uri: str) -> None:
    lines = ok(uri, "dmesg", "-H").splitlines()
    assert re.fullmatch(r"\[[A-Z][a-z]{2}\d\d \d\d:\d\d\] \S+\.\w+\[0\]: .*", lines[0])
    assert "--delta can only be used with --human" in fails(uri, "dmesg", "--delta", rc=2)


def test_dmesg_follow_and_new(uri: str) -> None:
    follower = subprocess.Popen(
        [str(PFLUX), "dmesg", "-f", "-n"],
        stdout=subprocess.PIPE,
        text=True,
        env=environ(PFLUX_URI=uri),
    )
    assert follower.stdout is not None
    try:
        # the follow request is registered once the client has connected: until a line
        # comes, make the broker log one (a client that hangs up mid-message)
        deadline = time.monotonic() + 60
        line = ""
        while not line and time.monotonic() < deadline:
            with socket.socket(socket.AF_UNIX) as sock:
                sock.connect(uri.removeprefix("local://"))
                sock.sendall(b"\x00\x00\x00\x40{")
            if select.select([follower.stdout], [], [], 2)[0]:
                line = follower.stdout.readline()
        assert re.fullmatch(
            rf"{ISO} connector\.info\[0\]: uid \d+ pid \d+ disconnected mid-message\n", line
        )
    finally:
        follower.kill()
        follower.wait()
        follower.stdout.close()


def test_dmesg_has_the_module_processes_entries(uri: str) -> None:
    with subprocess.Popen(
        [str(PFLUX), "dmesg", "-f"], stdout=subprocess.PIPE, text=True, env=environ(PFLUX_URI=uri)
    ) as follower:
        assert follower.stdout is not None
        try:
            # job-list, in its own process, logs once it has read the journal; the
            # line is awaited (the suite's per-test timeout bounds the wait)
            wanted = re.compile(rf"{ISO} job-list\.info\[0\]: job-list: \d+ jobs from the journal")
            seen = []
            for line in follower.stdout:
                seen.append(line)
                if wanted.fullmatch(line.rstrip("\n")):
                    break
            assert wanted.fullmatch(seen[-1].rstrip("\n")), seen
        finally:
            follower.kill()


def test_dmesg_clear(uri: str) -> None:
    assert ok(uri, "dmesg", "-C") == ""
    assert "instance ready" not in ok(uri, "dmesg", "-c")
    assert ok(uri, "dmesg") == ""


# ------------------------------------------------------------------ start with nothing to run


def test_start_without_command_off_a_terminal_announces_itself() -> None:
    proc = subprocess.Popen(
        [str(PFLUX), "start"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=without_uri(),
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    try:
        uri = proc.stdout.readline().strip()
        assert uri.startswith("local://")
        hint = proc.stderr.readline()
        assert hint == f"pflux-start: serving; use it with: export PFLUX_URI={uri}\n"
        assert ok(uri, "getattr", "size") == "1\n"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def test_start_without_command_on_a_terminal_runs_a_shell() -> None:
    pid, fd = pty.fork()
    if pid == 0:  # the child: pflux start on the terminal, with sh as $SHELL
        env = without_uri(SHELL="/bin/sh", PATH=f"{PFLUX.parent}:{os.environ['PATH']}", PS1="$ ")
        os.execve(str(PFLUX), [str(PFLUX), "start"], env)
    try:
        os.write(fd, b'echo "IN=$FLUX_URI"; pflux getattr size; exit 7\n')
        output = b""
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if not select.select([fd], [], [], 5)[0]:
                continue
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: the terminal's last user has gone
                break
            if not chunk:
                break
            output += chunk
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(fd)
    text = output.decode(errors="replace")
    assert re.search(r"IN=local://\S+/local\r?$", text, re.M), text
    assert re.search(r"^1\r?$", text, re.M), text
    assert os.waitstatus_to_exitcode(status) == 7
