"""A script written as flux-core's src/test/throughput.py is (its APIs, in its order) runs
unchanged against a live instance: test-mode jobs submitted asynchronously, each followed
through its eventlog by callbacks, a Bottombar counting them."""

from __future__ import annotations

import json

from support.instance import LiveInstance
from support.shim import run_flux

SCRIPT = """
    import json, sys, time
    import flux
    from flux import job
    from flux.job import JobspecV1
    from flux.progress import Bottombar

    handle = flux.Flux()
    spec = JobspecV1.from_command(["true"])
    spec.setattr_shell_option("verbose", 1)
    spec.setattr("system.exec.test.run_duration", "0.001s")
    jobs, counts = {}, {"submitted": 0, "running": 0, "complete": 0}
    bbar = Bottombar(lambda bb, width: f"{counts['complete']}/{bb.total} complete", total=20)
    bbar.start()

    def event_cb(future, jobid):
        event = future.get_event()
        if event is None:
            return
        if event.name == "submit":
            counts["submitted"] += 1
        elif event.name == "start":
            counts["running"] += 1
        elif event.name == "finish":
            counts["running"] -= 1
            counts["complete"] += 1
        jobs[jobid][event.name] = event.timestamp
        bbar.update()

    def submit_cb(future):
        jobid = future.get_id()
        jobs[jobid] = {"t_submit": time.time()}
        job.event_watch_async(handle, jobid).then(event_cb, jobid)

    text = spec.dumps()
    for _ in range(20):
        job.submit_async(handle, text).then(submit_cb)
    handle.reactor_run()
    bbar.stop()
    first = min(j["submit"] for j in jobs.values())
    last = max(j["clean"] for j in jobs.values())
    print(json.dumps({"counts": counts, "jobs": len(jobs), "runtime": last - first}),
          file=sys.stderr)
    """


def test_a_throughput_style_script_follows_every_job_to_clean(instance: LiveInstance) -> None:
    proc = run_flux(SCRIPT, instance.uri, timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stderr.splitlines()[-1])
    assert result["counts"] == {"submitted": 20, "running": 0, "complete": 20}
    assert result["jobs"] == 20
    assert result["runtime"] > 0
    assert proc.stdout.endswith("20/20 complete\n")
