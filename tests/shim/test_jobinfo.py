"""flux.job.JobInfo as flux-core's: the response's values under their underscored names
(which tools read), annotations read as attributes, the worked-out fields flux jobs
shows (emoji, contextual info and time, why a job ended) and the attributes each
output field needs, and what a job's nested instance says of itself
(``get_instance_info``); against a live instance, in a clean interpreter."""

from __future__ import annotations

import os
from pathlib import Path
from textwrap import dedent

from pflux.api import Client
from pflux.spec.fluid import JobID
from support.instance import LiveInstance, jobspec, ok, read_fifo
from support.shim import flux_output

SYNTHETIC = """
import time
from flux.job import JobInfo
from flux.job.info import job_fields_to_attrs

def info(**fields):
    return JobInfo({"id": 1234, "userid": 0, "urgency": 16, **fields})

held = info(state=8, urgency=0, priority=0)
waiting = info(state=8, priority=0)
eta = info(state=8, priority=5, annotations={"sched": {"t_estimate": time.time() + 90}})
depend = info(state=2, dependencies=["afterok:f1", "after:f2"])
running = info(state=16, nodelist="node[0-1]", t_run=time.time() - 5, duration=60.0,
               annotations={"sched": {"queue": "debug"}, "user": {"note": "x"}})
for job in (held, waiting, eta, depend, running):
    print(repr(job.contextual_info))
print(running.sched.queue, repr(str(running.sched.nothing.deeper)), f"[{running.sched.no:>3}]")
print(running.annotations, repr(str(held.annotations)), repr(str(held.user)))
print(held.contextual_time, 4.0 < running.contextual_time < 60.0)
print(held._state_id, held._priority, held._urgency, repr(held._nnodes), repr(held._waitstatus))
print(type(held._exception).__name__, repr(held._exception.type), held._id == held.id)
print(held.state_emoji == "\\U0001f4c5", running.status_emoji == "\\U0001f3c3")

def ended(result, waitstatus=None, **exc):
    fields = {"state": 64, "result": result}
    if waitstatus is not None:
        fields["waitstatus"] = waitstatus
    for key, value in exc.items():
        fields["exception_" + key] = value
    return info(**fields)

for job in (
    ended(1, 0),
    ended(2, 256 * 3),
    ended(2, 137 * 256),  # a shell that reports its task killed by SIGKILL
    ended(2, 127 * 256),
    ended(2, occurred=True, type="exec", severity=0, note="no such file"),
    ended(2, occurred=True, type="oom", severity=0, note="killed"),
    ended(4, occurred=True, type="cancel", severity=0, note="by me"),
    ended(4),
    ended(8, 14),
):
    print(job.inactive_reason, job.returncode, job.status_abbrev, repr(job.result_emoji))
print(repr(running.inactive_reason), hasattr(running, "_status"), running.status, running._status)
print(sorted(job_fields_to_attrs(["id", "username", "contextual_time", "sched.reason"])))
try:
    job_fields_to_attrs(["nosuchfield"])
except KeyError as exc:
    print("KeyError", exc)
try:
    held.nosuchattr
except AttributeError as exc:
    print(exc)
"""


def test_jobinfo_works_out_what_flux_jobs_shows() -> None:
    lines = flux_output(dedent(SYNTHETIC), None).splitlines()
    assert lines[:5] == [
        "'held'",
        "'priority-hold'",
        "'eta:1.5m'",
        "'depends:afterok:f1,after:f2'",
        "'node[0-1]'",
    ]
    assert lines[5:] == [
        "debug '' [   ]",
        '{"sched": {"queue": "debug"}, "user": {"note": "x"}} \'\' \'\'',
        "0.0 True",
        "8 0 0 '' ''",
        "ExceptionInfo '' True",
        "True True",
        "Exit 0 0 CD '😀'",
        "Exit 3 3 F '💩'",
        "Killed 137 F '💩'",
        "command not found 127 F '💩'",
        "Exit 1 1 F '💩'",  # an exec exception is told by the return code
        "Exception: type=oom note=killed 1 F '💩'",
        "Canceled: by me -128 CA '💥'",
        "Canceled -128 CA '💥'",
        "Timeout -14 TO '⌛'",
        "'' False RUN RUN",  # kept once worked out
        "['annotations', 'duration', 'state', 't_cleanup', 't_run', 'userid']",
        "KeyError 'nosuchfield'",
        "invalid JobInfo attribute 'nosuchattr'",
    ]


def test_a_listed_job_has_the_underscored_values(instance: LiveInstance) -> None:
    out = flux_output(
        dedent(
            """
            import flux
            from flux.job import JobspecV1, job_list_id, submit, wait
            h = flux.Flux()
            jobid = submit(h, JobspecV1.from_command(["true"]), waitable=True)
            wait(h, jobid)
            job = job_list_id(h, jobid).get_jobinfo()
            print(job._nnodes, job._ntasks, job._waitstatus, job._state_id, job._result_id)
            print(job._nodelist == job.nodelist != "", job._priority == job.priority)
            print(job._exception.occurred, job.inactive_reason, job.status)
            """
        ),
        instance.uri,
    )
    assert out.splitlines() == ["1 1 0 64 1", "True True", "False Exit 0 COMPLETED"]


def test_a_nested_instances_info(instance: LiveInstance, tmp_path: Path) -> None:
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    script = tmp_path / "nest.sh"
    script.write_text(
        "#!/bin/sh\n"
        "flux submit --urgency=hold true >/dev/null\n"
        f"echo ready > {fifo}\n"
        "exec sleep 300\n"
    )
    out = f"--output={tmp_path}/flux-{{{{id}}}}.out"
    outer = JobID.parse(ok(instance.uri, "batch", "-n1", out, str(script)).strip())
    assert read_fifo(fifo).strip() == "ready"
    with Client(instance.uri) as client:
        client.wait_event(outer, "memo")  # the nested instance's uri
        held = client.submit(jobspec(), urgency="hold")
        client.wait_event(held, "priority")
        out = flux_output(
            dedent(
                f"""
                import flux
                from flux.job import job_list_id
                h = flux.Flux()
                nested = job_list_id(h, {int(outer)}).get_jobinfo().get_instance_info()
                stats = nested.instance.stats
                print(str(stats), f"[{{stats:>16}}]", stats.pending, stats.total)
                print(nested.instance.utilization, nested.instance.progress)
                print(nested.instance.gpu_utilization == "")
                plain = job_list_id(h, {int(held)}).get_jobinfo().get_instance_info()
                print(repr(str(plain.instance.stats)), repr(plain.instance.utilization))
                """
            ),
            instance.uri,
        )
        client.cancel(outer)
        client.cancel(held)
    assert out.splitlines() == [
        "PD:1 R:0 CD:0 F:0 [PD:1 R:0 CD:0 F:0] 1 1",
        "0.0 0.0",
        "True",
        "'' ''",
    ]
