"""``resource reload``: the scheduler takes the resources of an R file while no job
holds or waits for any; hwloc XML, a bad R and a busy scheduler are refused."""

from __future__ import annotations

import json
from pathlib import Path

from support.instance import LiveInstance, fails, ok


def _r(path: Path, ranks: str, cores: str, hosts: list[str]) -> str:
    doc = {
        "version": 1,
        "execution": {
            "R_lite": [{"rank": ranks, "children": {"core": cores}}],
            "nodelist": hosts,
            "starttime": 0.0,
            "expiration": 0.0,
        },
    }
    path.write_text(json.dumps(doc))
    return str(path)


def test_reload_schedules_the_r_file_s_resources(tmp_path: Path) -> None:
    with LiveInstance(tmp_path / "state", cores=2) as live:
        uri = live.uri
        assert ok(uri, "resource", "info") == "1 Nodes, 2 Cores, 0 GPUs\n"
        two = _r(tmp_path / "two.json", "0-1", "0", ["ha", "hb"])
        ok(uri, "resource", "reload", two)
        assert ok(uri, "resource", "info") == "2 Nodes, 2 Cores, 0 GPUs\n"
        assert ok(uri, "run", "-N2", "-n2", "true") == ""  # both ranks are scheduled
        denied = fails(uri, "run", "-n1", "-c2", "true")
        assert "unsatisfiable request: need 1 slot(s) of 2 core(s)" in denied  # 1 a node now
        jobid = ok(uri, "submit", "sleep", "300").strip()
        ok(uri, "job", "wait-event", jobid, "alloc")
        assert fails(uri, "resource", "reload", two) == (
            "pflux-resource: ERROR: reload: 1 job hold or wait for resources;"
            " reload once none does\n"
        )
        ok(uri, "cancel", jobid)
        ok(uri, "job", "wait-event", jobid, "clean")
        assert "--xml: not supported: pflux reads no hwloc XML" in fails(
            uri, "resource", "reload", "-x", str(tmp_path)
        )
        (tmp_path / "bad.json").write_text('{"version": 9}')
        assert "reload: R: " in fails(uri, "resource", "reload", str(tmp_path / "bad.json"))
        assert "No such file or directory" in fails(
            uri, "resource", "reload", str(tmp_path / "none.json")
        )
        events = ok(uri, "resource", "eventlog").splitlines()
        assert events[-1].split()[1:] == ["resource-define", 'method="reload"']
        assert ok(uri, "resource", "info") == "2 Nodes, 2 Cores, 0 GPUs\n"


def test_ranks_the_instance_lacks_are_refused_unless_forced_then_down(tmp_path: Path) -> None:
    with LiveInstance(tmp_path / "state", "--test-size=2", cores=2) as live:
        uri = live.uri
        three = _r(tmp_path / "three.json", "0-2", "0", ["ha", "hb", "hc"])
        assert fails(uri, "resource", "reload", three) == (
            "pflux-resource: ERROR: reload: R has ranks 2 this instance (size 2) does not"
            " have (-f to keep them, down)\n"
        )
        ok(uri, "resource", "reload", "-f", three)
        assert ok(uri, "resource", "info") == "3 Nodes, 3 Cores, 0 GPUs\n"
        assert ok(uri, "resource", "status", "-s", "offline", "-no", "{ranks}") == "2\n"
