"""``pflux hostlist`` (flux-hostlist(1)): its operations, and sources from a live instance."""

from __future__ import annotations

import os
import subprocess

import pytest

from pflux.api import Client
from pflux.spec.fluid import JobID
from support.instance import PFLUX, environ, fails, ok, pflux


def hostlist(*args: str, stdin: str | None = None) -> str:
    """``pflux hostlist ARGS`` with no instance reachable (sources of hosts need none)."""
    return ok("local:///nonexistent/socket", "hostlist", *args, stdin=stdin)


@pytest.mark.parametrize(
    ("args", "out"),
    [
        (("node[1-3]", "node2"), "node[1-3,2]\n"),
        (("-e", "-d", ",", "node[1-3]"), "node1,node2,node3\n"),
        (("-e", "-d", "\\n", "node[1-2]"), "node1\nnode2\n"),
        (("-c", "node[1-5]", "node1"), "6\n"),
        (("-u", "node[3,1,2]", "node1"), "node[1-3]\n"),
        (("-S", "node10", "node2", "bar"), "bar,node[2,10]\n"),
        (("-i", "node[1-5]", "node[4-8]"), "node[4-5]\n"),
        (("-m", "node[1-5]", "node[2-3]"), "node[1,4-5]\n"),
        (("-X", "node[1-5]", "node[4-8]"), "node[1-3,6-8]\n"),
        (("-n", "-1", "node[1-5]"), "node5\n"),
        (("-n", "0,2", "node[1-5]"), "node[1,3]\n"),
        (("-x", "0", "node[1-5]"), "node[2-5]\n"),
        (("-x", "node3", "node[1-5]"), "node[1-2,4-5]\n"),
        (("-L", "2", "node[1-5]"), "node[1-2]\n"),
        (("-L", "-2", "node[1-5]"), "node[4-5]\n"),
        (("-F", "node[2,4]", "node[1-5]"), "1 3\n"),
        (("-q", "node1"), ""),
    ],
)
def test_operations(args: tuple[str, ...], out: str) -> None:
    assert hostlist(*args) == out


def test_stdin_quiet_and_errors() -> None:
    assert hostlist(stdin="node[1-2]\nnode3\n") == "node[1-3]\n"
    assert hostlist("-", stdin="node1 node3") == "node[1,3]\n"
    uri = "local:///nonexistent/socket"
    assert pflux(uri, "hostlist", "-q", "-m", "node1", "node1").returncode == 1
    assert "Invalid jobid or hostlist node[1-" in fails(uri, "hostlist", "node[1-")
    assert "--find: node9 is not in the hostlist" in fails(uri, "hostlist", "-F", "node9", "node1")
    assert "--nth: index out of range" in fails(uri, "hostlist", "-n", "4", "node1")


def test_instance_local_avail_and_job_sources(
    uri: str, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = os.uname().nodename
    assert ok(uri, "hostlist", "instance") == f"{host}\n"
    assert ok(uri, "hostlist", "-l") == f"{host}\n"
    assert ok(uri, "hostlist", "avail") == f"{host}\n"
    jobid = JobID.parse(ok(uri, "submit", "true").strip())
    client.wait(jobid)
    assert ok(uri, "hostlist", "-c", str(jobid), f"{jobid}") == "2\n"
    missing = str(int(jobid) + 1)  # a decimal id is a valid hostname too
    assert fails(uri, "hostlist", missing).endswith(f"job {missing} not found\n")
    assert ok(uri, "hostlist", "-f", missing) == f"{missing}\n"
    monkeypatch.setenv("FLUX_JOB_ID", str(jobid))
    assert ok(uri, "hostlist", "local") == f"{host}\n"
    ok(uri, "resource", "drain", "0")
    try:
        assert pflux(uri, "hostlist", "-q", "avail").returncode == 1
    finally:
        ok(uri, "resource", "undrain", "0")


def test_stdin_that_stays_silent_times_out() -> None:
    env = environ(PFLUX_HOSTLIST_STDIN_TIMEOUT="0.2")
    proc = subprocess.Popen(
        [str(PFLUX), "hostlist"], stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    assert proc.stderr is not None
    assert proc.stdin is not None
    err = proc.stderr.read()  # stdin stays open and silent: the command gives up
    assert proc.wait(timeout=60) == 1
    proc.stdin.close()
    proc.stderr.close()
    assert err == "pflux-hostlist: ERROR: timeout after 0.2s waiting for stdin\n"
