"""flux.job against a live instance, in a clean interpreter: submit, wait, result,
events, cancel, kill, listings, the journal, and flux-core's error cases."""

from __future__ import annotations

import json
import random
from textwrap import dedent

from pflux.spec.fluid import JobID as PfluxJobID
from support.instance import LiveInstance
from support.shim import flux_output

JOBSPEC = """
def jobspec(*command):
    return {
        "version": 1,
        "resources": [{"type": "slot", "count": 1, "label": "task",
                       "with": [{"type": "core", "count": 1}]}],
        "tasks": [{"command": list(command), "slot": "task", "count": {"per_slot": 1}}],
        "attributes": {"system": {"duration": 0}},
    }
"""


def test_submit_wait_and_result_of_a_job(instance: LiveInstance) -> None:
    out = flux_output(
        JOBSPEC
        + dedent(
            """
        import json, flux, flux.job
        h = flux.Flux()
        ok = flux.job.submit(h, jobspec("true"), waitable=True)
        bad = flux.job.submit_async(h, json.dumps(jobspec("false")), waitable=True).get_id()
        print(type(ok).__name__, ok == flux.job.JobID(ok.f58))
        print(flux.job.wait(h, ok))
        print(flux.job.wait(h, bad).success)
        r = flux.job.result(h, bad)
        print(r.result, r.returncode, r.to_dict()["jobid"] == bad.f58)
        print([e.name for e in flux.job.event_watch(h, ok)][-1])
        print(flux.job.event_wait(h, ok, "finish").context)
        """
        ),
        instance.uri,
    )
    lines = out.splitlines()
    assert lines[0] == "JobID True"
    assert lines[1].startswith("JobWaitResult(jobid=")
    assert "success=True, errstr=b'')" in lines[1]
    assert lines[2:] == ["False", "FAILED 1 True", "clean", "{'status': 0}"]


def test_a_jobspec_is_sent_as_its_dumps_says_unless_that_is_the_package_s_own(
    instance: LiveInstance,
) -> None:
    # a plain Jobspec's object goes out as it is (not made into text and read back);
    # a subclass's or an instance's own dumps is what is sent, as flux-core sends it
    out = flux_output(
        dedent(
            """
        import json, flux, flux.job
        from flux.job import JobspecV1
        from flux.job.submit import _jobspec_object

        class Swapped(JobspecV1):
            def dumps(self, **kw):
                return super().dumps(**kw).replace('"true"', '"false"')

        h = flux.Flux()
        plain = JobspecV1.from_command(["true"])
        print(_jobspec_object(plain) is plain.jobspec)
        swapped = Swapped.from_command(["true"])
        print(_jobspec_object(swapped)["tasks"][0]["command"])
        patched = JobspecV1.from_command(["true"])
        patched.dumps = lambda **kw: JobspecV1.dumps(patched, **kw).replace("true", "false")
        print(_jobspec_object(patched)["tasks"][0]["command"])
        for js in (plain, swapped, patched):
            print(flux.job.wait(h, flux.job.submit(h, js, waitable=True)).success)
        """
        ),
        instance.uri,
    )
    assert out.splitlines() == ["True", "['false']", "['false']", "True", "False", "False"]


def test_a_canceled_job_result_and_its_exception(instance: LiveInstance) -> None:
    out = flux_output(
        JOBSPEC
        + dedent(
            """
        import flux, flux.job
        h = flux.Flux()
        jobid = flux.job.submit(h, jobspec("sleep", "60"))
        flux.job.event_wait(h, jobid, "start")
        flux.job.cancel(h, jobid, "enough")
        try:
            flux.job.event_wait(h, jobid, "never")
        except flux.job.JobException as exc:
            print(exc)
        info = flux.job.result(h, jobid)
        print(info.result, info.exception.type, info.exception.note)
        """
        ),
        instance.uri,
    )
    assert out.splitlines() == ["job.exception: type=cancel: enough", "CANCELED cancel enough"]


def test_kill_and_raise_on_a_running_job(instance: LiveInstance) -> None:
    out = flux_output(
        JOBSPEC
        + dedent(
            """
        import flux, flux.job
        h = flux.Flux()
        jobid = flux.job.submit(h, jobspec("sleep", "60"))
        flux.job.event_wait(h, jobid, "start")
        flux.job.kill(h, jobid, 9)
        print(flux.job.result(h, jobid).returncode)
        pending = flux.job.submit(h, jobspec("true"), urgency=0)
        flux.job.job_raise(h, pending, "test", 0, "raised by a tool")
        info = flux.job.result(h, pending)
        print(info.result, info.returncode, info.exception.type)
        """
        ),
        instance.uri,
    )
    # the shell exits 128 + 9 for a task killed by SIGKILL, as flux-core's does
    assert out.splitlines() == ["137", "FAILED 1 test"]


def test_flux_errors_for_unknown_jobs_and_bad_jobspecs(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import errno, flux, flux.job
        h = flux.Flux()
        for call in (
            lambda: flux.job.result(h, 12345),
            lambda: flux.job.event_wait(h, 12345, "start"),
            lambda: flux.job.cancel(h, 12345),
            lambda: flux.job.submit(h, {"version": 1}),
            lambda: flux.job.submit(h, "{not json"),
            lambda: flux.job.submit(h, "{}", pre_signed=True),
        ):
            try:
                call()
            except OSError as exc:
                print(errno.errorcode[exc.errno], exc.strerror)
        try:
            flux.job.JobID("not-a-jobid")
        except ValueError as exc:
            print(exc)
        """,
        instance.uri,
    )
    lines = out.splitlines()
    assert [line.split()[0] for line in lines[:6]] == [
        "ENOENT",
        "ENOENT",
        "ENOENT",
        "EINVAL",
        "EINVAL",
        "EINVAL",
    ]
    assert lines[3].startswith("EINVAL invalid jobspec: ")
    assert lines[5] == "EINVAL sign-unwrap: header decode error: J is not HEADER.PAYLOAD.SIGNATURE"
    assert lines[6] == "not-a-jobid is not a valid Flux jobid"


def test_job_list_job_list_id_and_joblist(instance: LiveInstance) -> None:
    out = flux_output(
        JOBSPEC
        + dedent(
            """
        import flux, flux.job
        from flux.constants import FLUX_JOB_STATE_INACTIVE
        h = flux.Flux()
        jobid = flux.job.submit(h, jobspec("true"))
        flux.job.event_wait(h, jobid, "clean")
        job = flux.job.job_list_id(h, jobid).get_jobinfo()
        print(job.id == jobid, job.state, job.result, job.returncode, job.runtime >= 0)
        listed = flux.job.job_list(h, states=FLUX_JOB_STATE_INACTIVE).get_jobs()
        print(jobid in [j["id"] for j in listed])
        query = flux.job.JobList(h, filters=["completed"], ids=[jobid.f58, 12345])
        print([j.id == jobid for j in query.jobs()], query.errors)
        """
        ),
        instance.uri,
    )
    assert out.splitlines() == [
        "True INACTIVE COMPLETED 0 True",
        "True",
        "[True] ['JobID 12345 unknown']",
    ]


def test_journal_consumer_gives_history_then_sentinel_then_live_events(
    instance: LiveInstance,
) -> None:
    out = flux_output(
        JOBSPEC
        + dedent(
            """
        import flux, flux.job
        h = flux.Flux()
        old = flux.job.submit(h, jobspec("true"))
        flux.job.event_wait(h, old, "clean")
        consumer = flux.job.JournalConsumer(h, include_sentinel=True).start()
        history = []
        while True:
            event = consumer.poll(30)
            if event.is_empty():
                break
            history.append((event.jobid, event.name))
        print((old, "submit") in history, (old, "clean") in history)
        new = flux.job.submit(h, jobspec("true"))
        live = []
        while (new, "clean") not in live:
            event = consumer.poll(30)
            live.append((event.jobid, event.name))
        print([name for jobid, name in live if jobid == new][0], len(set(live)) == len(live))
        consumer.stop()
        print(consumer.poll(30))
        """
        ),
        instance.uri,
    )
    assert out.splitlines() == ["True True", "submit True", "None"]


def test_jobid_encodes_and_parses_every_encoding_as_pflux() -> None:
    rng = random.Random(18)
    ids = [0, 1, 2**64 - 1, *(rng.getrandbits(64) for _ in range(200))]
    out = flux_output(
        f"""
        import json
        from flux.job import JobID
        rows = []
        for n in {ids!r}:
            j = JobID(n)
            encs = [j.dec, j.hex, j.dothex, j.kvs, j.words, j.f58, j.f58plain, j.emoji]
            assert all(JobID(e) == n for e in encs), (n, encs)
            assert JobID(j) == n and JobID(" " + j.f58 + " ") == n
            rows.append(encs)
        print(json.dumps(rows))
        """,
        None,
    )
    for n, encs in zip(ids, json.loads(out), strict=True):
        ours = PfluxJobID(n)
        assert encs[:7] == [
            ours.dec,
            ours.hex,
            ours.dothex,
            ours.kvs,
            ours.words,
            ours.f58,
            ours.f58plain,
        ]
        assert 1 <= len(encs[7]) <= 7


def test_resource_list_counts_the_instance_resources(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import flux
        from flux.resource.list import resource_list
        r = resource_list(flux.Flux()).get()
        for state in ("all", "free", "allocated", "down"):
            s = r[state]
            print(state, s.nnodes, s.ncores, s.ngpus, s.rlist)
        """,
        instance.uri,
    )
    lines = out.splitlines()
    assert lines[0] == "all 1 4 0 rank0/core[0-3]"
    assert lines[3] == "down 0 0 0 "


def test_callbacks_follow_a_job_as_flux_executor_does(instance: LiveInstance) -> None:
    out = flux_output(
        JOBSPEC
        + dedent(
            """
            import flux, flux.job
            h = flux.Flux()
            names = []

            def on_event(future):
                event = future.get_event()
                if event is not None:
                    names.append(event.name)

            def on_submit(future):
                flux.job.event_watch_async(h, future.get_id()).then(on_event)

            flux.job.submit_async(h, jobspec("true")).then(on_submit)
            h.reactor_run()
            print(names[0], names[-1], "start" in names)
            """
        ),
        instance.uri,
    )
    assert out.splitlines() == ["submit clean True"]


def test_a_canceled_watch_gives_no_more_events(instance: LiveInstance) -> None:
    out = flux_output(
        JOBSPEC
        + dedent(
            """
            import flux, flux.job
            h = flux.Flux()
            jobid = flux.job.submit(h, jobspec("sleep", "60"))
            watch = flux.job.event_watch_async(h, jobid)
            print(watch.get_event().name)
            watch.cancel()
            rest = []  # what had arrived before the cancel, then the end
            while (event := watch.get_event()) is not None:
                rest.append(event)
            print(watch.get_event(), watch._more)
            flux.job.cancel(h, jobid)
            """
        ),
        instance.uri,
    )
    assert out.splitlines() == ["submit", "None False"]


def test_a_consumer_written_for_flux_core_s_journal_base_runs(instance: LiveInstance) -> None:
    out = flux_output(
        """
        import flux
        from flux.abc import JournalConsumerBase, JournalEventBase
        from flux.job import JobspecV1, submit

        class Consumer(JournalConsumerBase):
            def __init__(self, h):
                super().__init__(h, "job-manager.events-journal", include_sentinel=True)

            @property
            def request_payload(self):
                return {"full": True}

            def process_response(self, resp):
                return {"ids": len(resp["events"])}

            def create_event(self, entry, ids=0):
                return JournalEventBase(entry["entry"])

        h = flux.Flux()
        submit(h, JobspecV1.from_command(["true"]), waitable=True)
        consumer = Consumer(h).start()
        history = []
        while True:
            event = consumer.poll(timeout=30)
            if event.is_empty():
                break
            history.append(event)
        times = [e.timestamp for e in history]
        consumer.stop()
        while consumer.poll(timeout=30) is not None:
            pass
        print("submit" in [e.name for e in history], times == sorted(times))
        """,
        instance.uri,
    )
    assert out == "True True\n"
