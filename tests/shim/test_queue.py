"""flux.queue against a live instance, in a clean interpreter: QueueList's one anonymous
queue, its state, its (absent) limits and its resources, as flux-core's t0034 expects."""

from __future__ import annotations

from pathlib import Path

from support.instance import LiveInstance, ok
from support.shim import flux_output

CODE = """
import flux
from flux.queue import QueueList
qlist = QueueList(flux.Flux())
queues = list(qlist)
q = queues[0]
print(len(queues), repr(q.name), q.is_default, q.enabled, q.started, q is qlist[""] is qlist[None])
print(q.defaults.timelimit, q.limits.timelimit, q.limits.min, q.limits.max)
r = q.resources
print(r.all.ncores, r.up.nnodes, r.free.ncores, r.allocated.ncores, r.down.nnodes)
try:
    QueueList(flux.Flux(), ["batch"])
except ValueError as exc:
    print(exc)
"""


def test_queue_list_has_the_anonymous_queue_with_its_state(instance: LiveInstance) -> None:
    before = flux_output(CODE, instance.uri).splitlines()
    ok(instance.uri, "queue", "stop", "--quiet")
    try:
        stopped = flux_output(CODE, instance.uri).splitlines()
    finally:
        ok(instance.uri, "queue", "start", "--quiet")
    assert before == [
        "1 '' True True True True",
        "inf inf QueueResourceCounts(nnodes=0, ncores=0, ngpus=0)"
        " QueueResourceCounts(nnodes=inf, ncores=inf, ngpus=inf)",
        "4 1 4 0 0",
        "No such queue: batch",
    ]
    assert stopped[0] == "1 '' True True False True"


def test_queue_info_takes_limits_from_the_queue_then_the_instance_policy() -> None:
    out = flux_output(
        """
        from flux.queue import QueueInfo
        from flux.resource.list import SchedResourceList
        config = {
            "policy": {
                "jobspec": {"defaults": {"system": {"queue": "batch", "duration": "1h"}}},
                "limits": {"duration": "4h", "job-size": {
                    "min": {"nnodes": 2, "ncores": 1, "ngpus": 1},
                    "max": {"nnodes": 10, "ncores": -1}}},
            },
            "queues": {
                "batch": {"requires": ["batch"], "policy": {
                    "jobspec": {"defaults": {"system": {"duration": "2h"}}},
                    "limits": {"duration": "8h", "job-size": {
                        "min": {"nnodes": 5, "ncores": 1, "ngpus": 1},
                        "max": {"nnodes": 15, "ncores": 20, "ngpus": 4}}}}},
                "debug": {"policy": {"limits": {"duration": "2h", "job-size": {
                    "max": {"nnodes": 4}, "min": {"ncores": 2}}}}},
            },
        }
        R = {"version": 1, "execution": {
            "R_lite": [{"rank": "0-3", "children": {"core": "0-1"}}],
            "nodelist": ["n[0-3]"], "properties": {"batch": "2-3"}}}
        resources = SchedResourceList({"all": R, "allocated": None, "down": None})
        for name in ("batch", "debug"):
            q = QueueInfo(name, config, resources, True, False, name == "batch")
            lim = q.limits
            print(name, q.is_default, q.defaults.timelimit, lim.timelimit,
                  [lim.min.nnodes, lim.min.ncores, lim.min.ngpus],
                  [lim.max.nnodes, lim.max.ncores, lim.max.ngpus], q.resources.all.rlist)
        """,
        None,
    )
    assert out.splitlines() == [
        "batch True 7200.0 28800.0 [5, 1, 1] [15, 20, 4] rank[2-3]/core[0-1]",
        "debug False 3600.0 7200.0 [2, 2, 1] [4, inf, inf] rank[0-3]/core[0-1]",
    ]


NAMED = """
[[resource.config]]
hosts = "node[0-1]"
cores = "0-1"
properties = ["batch"]

[[resource.config]]
hosts = "node2"
cores = "0-3"
properties = ["debug"]

[queues.batch]
requires = ["batch"]

[queues.debug]
requires = ["debug"]
policy.limits.duration = "1h"

[policy.jobspec.defaults.system]
queue = "batch"
"""


def test_queue_list_sees_the_configured_queues(tmp_path: Path) -> None:
    config = tmp_path / "queues.toml"
    config.write_text(NAMED)
    with LiveInstance(tmp_path / "state", "--config", str(config), cores=None) as live:
        ok(live.uri, "queue", "stop", "-q", "debug", "--quiet")
        out = flux_output(
            """
            import flux
            from flux.queue import QueueList
            h = flux.Flux()
            print(h.rpc("job-manager.queue-list").get()["queues"])
            print(h.rpc("job-manager.queue-status", {"name": "debug"}).get())
            for q in QueueList(h):
                r = q.resources.all
                print(q.name, q.is_default, q.enabled, q.started, q.limits.timelimit,
                      r.nnodes, r.ncores)
            print(QueueList(h, ["debug"])["debug"].name)
            """,
            live.uri,
        )
    assert out.splitlines() == [
        "['batch', 'debug']",
        "{'enable': True, 'start': False}",
        "batch True True True inf 2 4",
        "debug False True False 3600.0 1 4",
        "debug",
    ]
