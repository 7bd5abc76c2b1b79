"""Jobs over several nodes: a shell per node, each node given back as its shell ends."""

from __future__ import annotations

import os
from pathlib import Path

from support.instance import LiveInstance, ok

TWO_NODES = '[[resource.config]]\nhosts = "node[0-1]"\ncores = "0-1"\n'


def test_a_node_whose_tasks_ended_runs_another_job_while_the_first_runs(
    tmp_path: Path,
) -> None:
    """RFC 32's partial release, through the job manager and the scheduler: job A's task on
    node1 ends at once, its task on node0 waits for a FIFO; job B needs a whole node, and
    only node1's second core, given back by A, makes one."""
    config = tmp_path / "two.toml"
    config.write_text(TWO_NODES)
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    wait = f'test "$FLUX_TASK_RANK" = 1 || read line < {fifo}'
    with LiveInstance(tmp_path / "state", "--config", str(config), cores=None) as live:
        first = ok(live.uri, "submit", "-N2", "-n2", "sh", "-c", wait).strip()
        ok(live.uri, "job", "wait-event", "-t", "30", first, "start")
        second = ok(live.uri, "submit", "-N1", "-n1", "-c2", "true").strip()
        ok(live.uri, "job", "wait-event", "-t", "30", second, "clean")
        assert ok(live.uri, "jobs", "-n", "-o", "{state}", first).strip() == "RUN"
        events = ok(live.uri, "job", "eventlog", first)
        assert 'release ranks="1" final=false' in events
        with fifo.open("w") as go:
            go.write("go\n")
        ok(live.uri, "job", "attach", first)
        ok(live.uri, "job", "wait-event", "-t", "30", first, "clean")


def test_label_io_names_task_ranks_across_nodes(tmp_path: Path) -> None:
    config = tmp_path / "two.toml"
    config.write_text(TWO_NODES)
    with LiveInstance(tmp_path / "state", "--config", str(config), cores=None) as live:
        out = ok(live.uri, "run", "-N2", "-n4", "--label-io", "sh", "-c", "echo $FLUX_TASK_RANK")
    assert sorted(out.splitlines()) == [f"{rank}: {rank}" for rank in range(4)]
