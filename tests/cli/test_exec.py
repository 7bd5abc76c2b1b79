"""``exec``: a command on chosen ranks of a two-rank instance, outside any job (the
``rexec`` service of each rank): labelled output, stdin to every rank, the working
directory, flux's exit codes and summary, a command not found, and a process killed
with its requester."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pflux.client.handle import Handle
from pflux.errors import RPCError
from support.instance import PFLUX, LiveInstance, environ, fails, ok, pflux


@pytest.fixture(scope="module")
def ranks2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    state = tmp_path_factory.mktemp("exec") / "state"
    with LiveInstance(state, "--test-size=2") as live:
        yield live.uri


def test_every_rank_runs_it_and_l_labels_the_lines(ranks2: str) -> None:
    proc = pflux(ranks2, "exec", "-l", "-n", "sh", "-c", "echo out; echo err >&2")
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.splitlines()) == ["0: out", "1: out"]
    assert sorted(proc.stderr.splitlines()) == ["0: err", "1: err"]


def test_stdin_goes_to_each_chosen_rank_and_d_sets_the_directory(
    ranks2: str, tmp_path: Path
) -> None:
    proc = pflux(ranks2, "exec", "-r", "1", "cat", stdin="line one\nline two\n")
    assert (proc.returncode, proc.stdout) == (0, "line one\nline two\n")
    proc = pflux(ranks2, "exec", "-n", "-r", "all", "-x", "0", "-d", str(tmp_path), "pwd")
    assert (proc.returncode, proc.stdout) == (0, f"{tmp_path}\n")
    proc = pflux(ranks2, "exec", "-n", "-r", "0", "cat")
    assert (proc.returncode, proc.stdout) == (0, "")
    raw = subprocess.run(
        [str(PFLUX), "exec", "-r", "0", "od", "-An", "-tx1"],
        input=b"\xff\xfe\n",
        capture_output=True,
        env=environ(PFLUX_URI=ranks2),
        timeout=60,
        check=True,
    )
    assert raw.stdout.split() == [b"ff", b"fe", b"0a"]  # bytes that are not UTF-8, as they are


def test_the_exit_code_is_the_largest_with_flux_summary(ranks2: str) -> None:
    script = 'test "$(pflux getattr rank)" = 1 && exit 3; kill -9 $$'
    proc = pflux(ranks2, "exec", "-n", "sh", "-c", script)
    assert proc.returncode == 137
    assert sorted(proc.stderr.splitlines()) == ["0: Killed", "1: Exit 3"]
    proc = pflux(ranks2, "exec", "-n", "-l", "sh", "-c", "pflux getattr rank; exit 4")
    assert sorted(proc.stdout.splitlines()) == ["0: 0", "1: 1"]  # each rank's own broker
    assert (proc.returncode, proc.stderr) == (4, "[0-1]: Exit 4\n")
    proc = pflux(ranks2, "exec", "-n", "-q", "sh", "-c", "exit 2")
    assert (proc.returncode, proc.stderr) == (2, "")


def test_refusals_name_the_rank_and_the_rule(ranks2: str) -> None:
    proc = pflux(ranks2, "exec", "-n", "-r", "0", "no-such-command-here")
    assert proc.returncode == 127
    assert proc.stderr == (
        "pflux-exec: Error: rank 0: no-such-command-here: error launching process:"
        " No such file or directory\n"
    )
    proc = pflux(ranks2, "exec", "-r", "2", "true")
    assert (proc.returncode, proc.stderr) == (
        1,
        "pflux-exec: ERROR: One or more invalid --ranks specified: 2\n",
    )
    with Handle(ranks2) as handle:
        with pytest.raises(RPCError, match=r"rexec\.exec must be a streaming request"):
            handle.call("rexec.exec", {"cmd": ["true"], "env": {}})
        with pytest.raises(RPCError, match=r"rexec: no process 1 of rexec's on this rank"):
            handle.call("rexec.kill", {"pid": 1, "signum": 9})
        with pytest.raises(RPCError, match=r"rexec\.exec: cmd: expected array of length >= 1"):
            handle.rpc("rexec.exec", {"cmd": [], "env": {}}, streaming=True).get()


def test_a_process_dies_with_its_requester(ranks2: str, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    cmd = [str(PFLUX), "exec", "-n", "-r", "1", "sh", "-c", f"echo $$ > {pidfile}; exec sleep 300"]
    client = subprocess.Popen(cmd, env=environ(PFLUX_URI=ranks2), start_new_session=True)
    deadline = time.monotonic() + 60
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.05)
    pid = int(pidfile.read_text())
    os.killpg(client.pid, signal.SIGKILL)  # no chance to forward anything
    client.wait()
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    pytest.fail(f"process {pid} outlived the exec that started it")


def test_v_says_when_each_process_starts_and_ends(ranks2: str) -> None:
    proc = pflux(ranks2, "exec", "-v", "-n", "-r", "1", "true")
    assert proc.returncode == 0
    lines = proc.stderr.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("1: started pid ")
    assert lines[1].endswith(" ended: status=0")


def test_the_api_gives_each_ranks_entries_blocking_and_async(ranks2: str) -> None:
    import asyncio

    import pflux

    with pflux.Client(ranks2) as client:
        remote = client.rexec([0, 1], ["cat"], env={"PATH": os.environ["PATH"]}, stdin=True)
        items = []
        for rank, entry in remote:
            items.append((rank, entry))
            if isinstance(entry, dict) and entry["type"] == "started" and len(remote.pids) == 2:
                remote.write(b"fed\n", eof=True)
    outputs = sorted(rank for rank, e in items if isinstance(e, dict) and e["type"] == "output")
    assert outputs == [0, 1]
    assert all(e["data"] == "fed\n" for _, e in items if isinstance(e, dict) and "data" in e)
    assert sorted(rank for rank, e in items if e is None) == [0, 1]

    async def session() -> list[tuple[int, Any]]:
        client = await pflux.AsyncClient.connect(ranks2)
        try:
            with pytest.raises(pflux.PfluxError, match=r"only Client\.rexec feeds"):
                async for _ in client.rexec([0], ["true"], env={}, stdin=True):
                    pass
            return [item async for item in client.rexec([1], ["echo", "hi"], env={})]
        finally:
            client.close()

    found = asyncio.run(session())
    assert [entry["type"] for _, entry in found[:-1]] == ["started", "output", "finished"]
    assert found[1][1]["data"] == "hi\n"
    assert found[-1] == (1, None)


def test_bg_starts_and_leaves_running_and_sproc_waits_for_a_waitable_one(ranks2: str) -> None:
    proc = pflux(
        ranks2, "exec", "--bg", "--waitable", "--label=three", "-r", "1", "sh", "-c", "exit 3"
    )
    assert proc.returncode == 0, proc.stderr
    rank, pid = proc.stdout.split(": ")
    assert rank == "1"
    assert int(pid) > 0
    proc = pflux(ranks2, "sproc", "wait", "-r", "1", "three")
    assert (proc.returncode, proc.stderr) == (3, "")
    assert "is not waitable" not in proc.stderr
    proc = pflux(ranks2, "sproc", "wait", "-r", "1", "three")  # taken once only
    assert proc.returncode == 1
    assert "no process labelled three on this rank" in proc.stderr

    started = ok(ranks2, "exec", "--bg", "--waitable", "--label=long", "sleep", "300")
    assert sorted(line.split(": ")[0] for line in started.splitlines()) == ["0", "1"]
    pid1 = dict(line.split(": ") for line in started.splitlines())["1"]
    listed = ok(
        ranks2, "sproc", "ps", "-r", "1", "-n", "-o", "{pid} {statex} {flags} {label} {cmd}"
    )
    assert f"{pid1} R bg,waitable long sleep 300" in listed.splitlines()
    assert ok(ranks2, "sproc", "ps", "-r", "1").splitlines()[0].split() == [
        "PID",
        "STAT",
        "FLAGS",
        "LABEL",
        "CMD",
    ]
    dup = pflux(ranks2, "exec", "--bg", "--label=long", "-r", "1", "true")
    assert dup.returncode == 1
    assert dup.stderr == "pflux-exec: Error: rank 1: true: rexec.exec: label long: already in use\n"
    proc = pflux(ranks2, "exec", "-n", "-r", "1", "--label=long", "true")  # in use
    assert (
        proc.stderr == "pflux-exec: Error: rank 1: true: rexec.exec: label long: already in use\n"
    )
    proc = pflux(ranks2, "sproc", "kill", "-w", "-r", "1", "15", "long")
    assert proc.returncode == 128 + signal.SIGTERM
    proc = pflux(ranks2, "sproc", "kill", "-w", "-r", "0", "9", "long")
    assert proc.returncode == 128 + signal.SIGKILL


def test_bg_without_waitable_is_reaped_and_the_refusals(ranks2: str) -> None:
    started = ok(ranks2, "exec", "--bg", "-r", "0", "sleep", "300")
    pid = started.split(": ")[1].strip()
    proc = pflux(ranks2, "sproc", "wait", "-r", "0", pid)
    assert proc.returncode == 1
    assert proc.stderr == f"pflux-sproc: ERROR: rexec.wait: process {pid} is not waitable\n"
    ok(ranks2, "sproc", "kill", "-r", "0", "9", pid)
    for _ in range(2):  # a foreground process's label, free again once it has ended
        listed = ok(
            ranks2, "exec", "-n", "-r", "0", "--label=fg", "pflux", "sproc", "ps", "-n", "-o",
            "{label} {statex} {flags}",
        )  # fmt: skip
        assert "fg R+ -" in listed.splitlines()
    assert fails(ranks2, "sproc", "ps", "-s", "sdexec", rc=2) == (
        "pflux-sproc: ERROR: --service=sdexec: only rexec is served by pflux\n"
    )
    assert fails(ranks2, "sproc", "wait", "-o", pid, rc=2) == (
        "pflux-sproc: ERROR: --output: pflux's rexec retains no output of a background process\n"
    )
    assert fails(ranks2, "exec", "--waitable", "true", rc=2).endswith(
        "--waitable can only be used with --bg\n"
    )
    assert fails(ranks2, "exec", "--bg", "-r", "0", "no-such-command-here") == (
        "pflux-exec: Error: rank 0: no-such-command-here: error launching process:"
        " No such file or directory\n"
    )
    with Handle(ranks2) as handle:
        with pytest.raises(RPCError, match=r"waitable can only be used with bg"):
            handle.rpc(
                "rexec.exec", {"cmd": ["true"], "env": {}, "waitable": True}, streaming=True
            ).get()
        with pytest.raises(RPCError, match=r"bg: a plain request"):
            handle.rpc("rexec.exec", {"cmd": ["true"], "env": {}, "bg": True}, streaming=True).get()


def test_jobid_runs_on_the_jobs_ranks_counted_from_zero(ranks2: str) -> None:
    jobid = ok(ranks2, "submit", "-N2", "sleep", "300").strip()
    try:
        ok(ranks2, "job", "wait-event", jobid, "start")
        proc = pflux(ranks2, "exec", "-j", jobid, "-x", "0", "-n", "-l", "pflux", "getattr", "rank")
        assert (proc.returncode, proc.stdout) == (0, "1: 1\n"), proc.stderr
        proc = pflux(ranks2, "exec", "-j", jobid, "-r", "2", "true")
        assert proc.stderr == "pflux-exec: ERROR: One or more invalid --ranks specified: 2\n"
    finally:
        ok(ranks2, "cancel", jobid)
    ok(ranks2, "job", "wait-event", jobid, "clean")
    assert fails(ranks2, "exec", "-j", jobid, "true") == (
        f"pflux-exec: ERROR: job {jobid} is not currently running\n"
    )
    assert fails(ranks2, "exec", "-j", "ƒ1", "true") == "pflux-exec: ERROR: job ƒ1 not found\n"
    assert fails(ranks2, "exec", "-j", "bad", "true") == (
        'pflux-exec: ERROR: error parsing jobid: "bad"\n'
    )
