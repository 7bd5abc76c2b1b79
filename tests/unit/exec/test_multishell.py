"""A job whose R spans ranks runs one shell per rank: its start, status, release, loss."""

from __future__ import annotations

import json
import os
import re
import signal
from typing import Any

from pflux.spec.eventlog import parse
from pflux.spec.idset import IdSet
from pflux.spec.resource import ResourceSet

HOSTS = ["node0", "node1"]
FINAL = ("release", {"ranks": "all", "final": True})
KILLED = (128 + signal.SIGTERM) << 8  # the status of a shell whose tasks SIGTERM killed


def two_ranks(cores: str = "0-1") -> dict[str, Any]:
    """R of two execution targets, ranks 0 and 1 on hosts node0 and node1."""
    ids = IdSet.decode(cores)
    return ResourceSet.build({0: (ids, IdSet()), 1: (ids, IdSet())}, HOSTS).to_json()


def four_tasks(live: Any, script: str) -> dict[str, Any]:
    """Two tasks on each of two nodes running ``sh -c script``."""
    return live.job(["sh", "-c", script], num_tasks=4, num_nodes=2)


def through_final_release(stream: Any) -> list[tuple[str, dict[str, Any]]]:
    got = []
    while not got or got[-1] != ("release", {"ranks": "all", "final": True}):
        got.append(stream.next())
    return got


def stdout_of(live: Any, jobid: int) -> dict[int, str]:
    """Each task's stdout, from the job's output eventlog."""
    text: dict[int, str] = {}
    for event in parse(live.guest(jobid, "output")):
        context = event.context or {}
        if event.name == "data" and context.get("stream") == "stdout":
            for rank in IdSet.decode(str(context["rank"])):
                if context.get("data"):
                    text[rank] = text.get(rank, "") + context["data"]
    return text


def test_each_rank_gets_its_own_shell_with_its_own_tasks(live: Any) -> None:
    script = 'echo "$PPID $FLUX_JOB_TMPDIR"'
    stream = live.start(four_tasks(live, script), two_ranks())
    got = through_final_release(stream)
    partial = [data for kind, data in got if kind == "release" and not data["final"]]
    assert [item for item in got if item[1] not in partial] == [
        ("start", {}),
        ("finish", {"status": 0}),
        FINAL,
    ]
    # a shell that ends a commit before the other gives its rank back first
    assert partial in ([], [{"ranks": "0", "final": False}], [{"ranks": "1", "final": False}])
    out = {rank: line.split() for rank, line in stdout_of(live, stream.id).items()}
    assert sorted(out) == [0, 1, 2, 3]
    shells = {rank: pid for rank, (pid, _) in out.items()}
    assert shells[0] == shells[1] != shells[2] == shells[3]  # a shell per rank, block map
    tmpdirs = {rank: os.path.basename(tmp) for rank, (_, tmp) in out.items()}
    assert re.fullmatch(r"jobtmp-0-.*", tmpdirs[0])
    assert re.fullmatch(r"jobtmp-1-.*", tmpdirs[2])
    events = {e.name: e.context for e in parse(live.guest(stream.id, "exec.eventlog"))}
    assert events["shell.init"] == {"leader-rank": 0, "size": 2}
    assert events["shell.start"] == {"taskmap": {"version": 1, "map": [[0, 2, 2, 1]]}}


def test_the_job_status_is_the_largest_of_its_shells(live: Any) -> None:
    script = 'test "$FLUX_TASK_RANK" = 3 && exit 5; exit 0'
    stream = live.start(four_tasks(live, script), two_ranks())
    through_final_release(stream)
    assert stream.status() == 5 << 8


def test_a_rank_whose_shell_ends_is_released_before_the_job_ends(live: Any) -> None:
    """Rank 1's tasks end at once; rank 0's wait for their stdin, sent only after."""
    script = 'test "$FLUX_TASK_RANK" -lt 2 && exec cat; exit 0'
    stream = live.start(four_tasks(live, script), two_ranks())
    assert stream.until("release") == [("start", {}), ("release", {"ranks": "1", "final": False})]
    live.call("job-exec.stdin", {"id": stream.id, "rank": "0-1", "data": "in\n", "eof": True})
    final = ("release", {"ranks": "all", "final": True})
    assert through_final_release(stream) == [("finish", {"status": 0}), final]
    assert stdout_of(live, stream.id) == {0: "in\n", 1: "in\n"}


def test_a_kill_reaches_every_shell(live: Any) -> None:
    stream = live.start(four_tasks(live, "exec sleep 300"), two_ranks())
    assert stream.next() == ("start", {})
    live.call("job-exec.kill", {"id": stream.id, "signum": signal.SIGTERM})
    got = through_final_release(stream)
    assert got[-2:] == [("finish", {"status": KILLED}), FINAL]


def test_a_lost_rank_fails_the_job_and_is_released_at_once(live: Any) -> None:
    stream = live.start(four_tasks(live, "exec sleep 300"), two_ranks())
    assert stream.next() == ("start", {})
    hello = {"hostname": "node1", "cores": "0-1", "gpus": "", "version": "0"}
    live.loop.call_soon_threadsafe(live.broker.rank_changed, 1, hello)
    live.loop.call_soon_threadsafe(live.broker.rank_changed, 1, None)
    note = "lost contact with job shell on node1 (rank 1)"
    assert through_final_release(stream) == [
        ("exception", {"severity": 0, "type": "exec", "note": note}),
        ("release", {"ranks": "1", "final": False}),
        ("finish", {"status": KILLED}),  # rank 0's tasks, killed as the job failed
        ("release", {"ranks": "all", "final": True}),
    ]


def test_pmi_spans_the_shells(live: Any, tmp_path: Any) -> None:
    """Each task puts a key and, after the barrier, gets every other task's."""
    client = tmp_path / "pmi_client.py"
    client.write_text(PMI_CLIENT)
    jobspec = live.job(["python3", str(client)], num_tasks=4, num_nodes=2)
    stream = live.start(jobspec, two_ranks())
    through_final_release(stream)
    assert stream.status() == 0
    got = {rank: json.loads(line) for rank, line in stdout_of(live, stream.id).items()}
    assert got == {rank: [f"card-{other}" for other in range(4)] for rank in range(4)}


PMI_CLIENT = r"""
import os, socket
sock = socket.socket(fileno=int(os.environ["PMI_FD"]))
f = sock.makefile("rwb", buffering=0)
def ask(line):
    f.write(line.encode() + b"\n")
    return dict(w.split("=", 1) for w in f.readline().decode().split())
rank, size = int(os.environ["PMI_RANK"]), int(os.environ["PMI_SIZE"])
ask("cmd=init pmi_version=1 pmi_subversion=1")
name = ask("cmd=get_my_kvsname")["kvsname"]
ask(f"cmd=put kvsname={name} key=card{rank} value=card-{rank}")
assert ask("cmd=barrier_in")["cmd"] == "barrier_out"
cards = [ask(f"cmd=get kvsname={name} key=card{r}")["value"] for r in range(size)]
ask("cmd=finalize")
print(__import__("json").dumps(cards))
"""


def test_a_job_of_two_shells_outlives_its_launcher(live: Any, tmp_path: Any) -> None:
    """Both shells rejoin the launcher job-exec starts in the dead one's place, and each is
    resumed from its own offset: nothing either wrote is lost or doubled."""
    for rank in (0, 1):
        os.mkfifo(tmp_path / f"go{rank}")
    script = f"echo one; read x < {tmp_path}/go$FLUX_TASK_RANK; echo two"
    jobspec = live.job(["sh", "-c", script], num_tasks=2, num_nodes=2)
    stream = live.start(jobspec, two_ranks("0"))
    assert stream.next() == ("start", {})
    live.wait_output(stream.id, "one")
    os.kill(live.exec.launcher.pid, signal.SIGKILL)
    for rank in (0, 1):
        with (tmp_path / f"go{rank}").open("w") as go:
            go.write("go\n")
    got = through_final_release(stream)
    assert got[-2:] == [("finish", {"status": 0}), FINAL]
    assert stdout_of(live, stream.id) == {0: "one\ntwo\n", 1: "one\ntwo\n"}
