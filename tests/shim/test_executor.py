"""flux.job.FluxExecutor against a live instance, in a clean interpreter: exit codes as
results, a job's exception, cancelling a future and a job, attach, callbacks and the
thread they run in, shutdown, and a bad jobspec, as flux-core's executor has them."""

from __future__ import annotations

import json
from pathlib import Path
from textwrap import dedent

from support.instance import LiveInstance
from support.shim import flux_output

PROLOGUE = """
import concurrent.futures as cf, threading
import flux, flux.job
from flux.job import FluxExecutor, FluxExecutorFuture, JobspecV1

def spec(*command):
    return JobspecV1.from_command(list(command))

def blocked(executor):
    '''Hold the executor's thread in a jobid callback until the returned event is set,
    so that what is submitted meanwhile stays queued, without an id.'''
    entered, gate = threading.Event(), threading.Event()
    while True:
        here = []
        def hold(future):
            if threading.current_thread() is threading.main_thread():
                here.append(future)  # the id came first: called at once, here
            else:
                entered.set()
                gate.wait()
        executor.submit(spec("true")).add_jobid_callback(hold)
        if not here:
            break
    assert entered.wait(30)
    return gate
"""


def run(code: str, uri: str) -> list[str]:
    return flux_output(PROLOGUE + dedent(code), uri).splitlines()


def test_results_are_exit_codes_and_ids_come_first(instance: LiveInstance) -> None:
    out = run(
        """
        seen = []
        with FluxExecutor(thread_name_prefix="ex") as executor:
            gate = blocked(executor)
            futures = [
                executor.submit(spec(*argv))
                for argv in (["true"], ["false"], ["sh", "-c", "exit 3"],
                             ["sh", "-c", "kill -9 $$"])
            ]
            futures[0].add_jobid_callback(
                lambda f: seen.append((threading.current_thread().name, f.done())))
            gate.set()
            done = list(cf.as_completed(futures, timeout=60))
            print([f.result(timeout=0) for f in futures])
            print([f.exception() for f in futures], len(done))
            jobid = futures[0].jobid()
            print(type(jobid).__name__, jobid > 0, futures[0].done(), futures[0].running())
        print(seen, isinstance(futures[0], cf.Future))
        """,
        instance.uri,
    )
    assert out == [
        "[0, 1, 3, 137]",  # a task killed by a signal: its shell exits 128 + 9, as flux's
        "[None, None, None, None] 4",
        "JobID True True False",
        "[('ex-0', False)] True",
    ]


def test_event_callbacks_run_in_the_executor_thread_and_at_once_when_past(
    instance: LiveInstance,
) -> None:
    out = run(
        """
        names, threads = [], set()
        def note(future, event):
            names.append(event.name)
            threads.add(threading.current_thread().name)
        with FluxExecutor(thread_name_prefix="ev") as executor:
            gate = blocked(executor)
            future = executor.submit(spec("true"))
            for name in FluxExecutorFuture.EVENTS:
                future.add_event_callback(name, note)
            gate.set()
            future.result(timeout=60)
        print(all(n in names for n in ("submit", "alloc", "start", "finish", "clean")))
        print(sorted(threads))
        late = []
        future.add_event_callback("start", lambda f, e: late.append(
            (e.name, threading.current_thread().name)))
        print(late)
        try:
            future.add_event_callback("no-such-event", note)
        except ValueError as exc:
            print("ValueError", exc)
        print(FluxExecutor.EVENTS is FluxExecutorFuture.EVENTS, "finish" in FluxExecutor.EVENTS)
        print(" ".join(sorted(FluxExecutorFuture.EVENTS)))
        """,
        instance.uri,
    )
    assert out == [
        "True",
        "['ev-0']",
        "[('start', 'MainThread')]",
        "ValueError no-such-event",
        "True True",
        # flux-core's MAIN_EVENTS: a validate or memo event is no callback's
        "alloc clean debug depend exception finish flux-restart free priority release start"
        " submit urgency",
    ]


def test_a_job_that_cannot_start_raises_its_job_exception(instance: LiveInstance) -> None:
    out = run(
        """
        with FluxExecutor() as executor:
            future = executor.submit(spec("/no/such/program"))
            exc = future.exception(timeout=60)
            print(type(exc).__name__, exc.type, exc.severity)
            try:
                future.result()
            except flux.job.JobException as raised:
                print(raised is exc, str(raised).startswith("job.exception: type=exec"))
        """,
        instance.uri,
    )
    assert out == ["JobException exec 0", "True True"]


def test_a_queued_future_cancels_and_a_running_job_is_cancelled_through_flux(
    instance: LiveInstance,
) -> None:
    out = run(
        """
        with FluxExecutor() as executor:
            gate = blocked(executor)
            queued = executor.submit(spec("true"))
            print(queued.cancel(), queued.cancel(), queued.cancelled(), queued.running())
            for call in (queued.jobid, queued.result):
                try:
                    call()
                except cf.CancelledError:
                    print("CancelledError")
            gate.set()
            started = threading.Event()
            running = executor.submit(spec("sleep", "60"))
            running.add_event_callback("start", lambda f, e: started.set())
            assert started.wait(60)
            print(running.cancel(), running.running())
            flux.job.cancel(flux.Flux(), running.jobid(), "enough")
            try:
                running.result(timeout=60)
            except flux.job.JobException as exc:
                print(exc.type, str(exc))
        """,
        instance.uri,
    )
    assert out == [
        "True True True False",
        "CancelledError",
        "CancelledError",
        "False True",
        "cancel job.exception: type=cancel: enough",
    ]


def test_attach_follows_a_job_submitted_otherwise(instance: LiveInstance) -> None:
    out = run(
        """
        h = flux.Flux()
        ended = flux.job.submit(h, spec("false"))
        flux.job.event_wait(h, ended, "clean")
        with FluxExecutor() as executor:
            attached = executor.attach(ended)
            print(attached.jobid() == ended, attached.result(timeout=60))
            again = executor.attach(executor.submit(spec("sh", "-c", "exit 5")).jobid())
            print(again.result(timeout=60))
            for jobid in (0, flux.job.JobID(2**40)):
                missing = executor.attach(jobid)
                print(repr(missing.exception(timeout=60)), missing.jobid() == jobid)
        """,
        instance.uri,
    )
    assert out == [
        "True 1",
        "5",
        "ValueError('job ID does not match any job') True",
        "ValueError('job ID does not match any job') True",
    ]


def test_a_bad_jobspec_fails_its_future_with_flux_errors(instance: LiveInstance) -> None:
    out = run(
        """
        import json
        with FluxExecutor() as executor:
            bad = executor.submit(json.dumps({"version": 1}))
            exc = bad.exception(timeout=60)
            print(type(exc).__name__, exc.errno, "resources" in exc.strerror)
            try:
                bad.jobid()
            except RuntimeError as err:
                print(str(err).startswith("job could not be submitted due to OSError(22"))
            print(repr(executor.submit(None).exception(timeout=60)))
            print(type(executor.submit(spec("true"), no_such=1).exception(timeout=60)).__name__)
            print(executor.submit(spec("true"), urgency=20, waitable=True).result(timeout=60))
        """,
        instance.uri,
    )
    assert out == [
        "OSError 22 True",
        "True",
        "OSError(22, 'jobspec must not be None/NULL')",
        "TypeError",
        "0",
    ]


def test_shutdown_waits_or_not_and_then_takes_no_job(instance: LiveInstance) -> None:
    out = run(
        """
        executor = FluxExecutor()
        futures = [executor.submit(spec("true")) for _ in range(20)]
        executor.shutdown(wait=True)
        print(all(f.done() for f in futures), {f.result() for f in futures})
        for call, arg in ((executor.submit, spec("true")), (executor.attach, 1)):
            try:
                call(arg)
            except RuntimeError as exc:
                print(exc)
        executor.shutdown()  # again: nothing to do

        executor = FluxExecutor()
        started = threading.Event()
        running = executor.submit(spec("sleep", "60"))
        running.add_event_callback("start", lambda f, e: started.set())
        assert started.wait(60)
        executor.shutdown(wait=False)
        print(running.done())
        flux.job.cancel(flux.Flux(), running.jobid())
        print(type(running.exception(timeout=60)).__name__)

        executor = FluxExecutor()
        gate = blocked(executor)
        queued = [executor.submit(spec("true")) for _ in range(3)]
        executor.shutdown(wait=False, cancel_futures=True)
        gate.set()
        done, _ = cf.wait(queued, timeout=60)
        print(len(done), all(f.cancelled() for f in queued))
        executor.shutdown(wait=True)
        """,
        instance.uri,
    )
    assert out == [
        "True {0}",
        "cannot schedule new futures after shutdown",
        "cannot schedule new futures after shutdown",
        "False",
        "JobException",
        "3 True",
    ]


def test_waiting_inside_a_callback_is_refused_and_logged(instance: LiveInstance) -> None:
    out = run(
        """
        import logging, io
        stream = io.StringIO()
        logging.basicConfig(stream=stream)
        errors = []
        def wait_inside(future):
            try:
                future.result()
            except RuntimeError as exc:
                errors.append(str(exc))
            future.exception()  # raises: logged, and the executor carries on
        with FluxExecutor() as executor:
            gate = blocked(executor)
            future = executor.submit(spec("true")).add_jobid_callback(wait_inside)
            gate.set()
            print(future.result(timeout=60), errors)
        print("Cannot wait for future from inside callback" in stream.getvalue())
        for bad in ({"threads": 0}, {"poll_interval": 0}):
            try:
                FluxExecutor(**bad)
            except ValueError as exc:
                print(exc)
        """,
        instance.uri,
    )
    assert out == [
        "0 ['Cannot wait for future from inside callback']",
        "True",
        "the number of threads must be > 0",
        "poll_interval must be seconds > 0, not 0",
    ]


def test_many_jobs_complete_across_threads(instance: LiveInstance) -> None:
    out = run(
        """
        import json
        with FluxExecutor(threads=2) as executor:
            futures = [executor.submit(spec("true")) for _ in range(100)]
            codes = [f.result(timeout=120) for f in futures]
            ids = {int(f.jobid()) for f in futures}
        print(json.dumps([sorted(set(codes)), len(ids)]))
        """,
        instance.uri,
    )
    assert json.loads(out[0]) == [[0], 100]


def test_an_executor_left_open_finishes_its_jobs_before_the_interpreter_exits(
    instance: LiveInstance,
) -> None:
    out = run(
        """
        executor = FluxExecutor()
        future = executor.submit(spec("sleep", "0.2"))
        future.add_done_callback(lambda f: print("done", f.result()))
        print("exiting")
        """,
        instance.uri,
    )
    assert out == ["exiting", "done 0"]


def test_a_lost_instance_fails_the_jobs_and_breaks_the_executor(tmp_path: Path) -> None:
    with LiveInstance(tmp_path / "state") as doomed:
        out = run(
            f"""
            import os, signal
            executor = FluxExecutor()
            started = threading.Event()
            running = executor.submit(spec("sleep", "60"))
            running.add_event_callback("start", lambda f, e: started.set())
            assert started.wait(60)
            os.kill({doomed.proc.pid}, signal.SIGKILL)
            print(repr(running.exception(timeout=60)))
            try:
                executor.submit(spec("true"))
            except RuntimeError as exc:
                print(exc)
            executor.shutdown()
            """,
            doomed.uri,
        )
        doomed.kill()
    assert out == [
        "ConnectionResetError(104, 'Connection to the Flux instance was lost')",
        "Executor is broken, new futures cannot be scheduled",
    ]


def test_the_thread_and_the_executors_internals_are_flux_cores(instance: LiveInstance) -> None:
    out = run(
        """
        import collections
        from flux.job.executor import _FluxExecutorThread, _SubmitPackage
        exit_event, deq = threading.Event(), collections.deque()
        thread = _FluxExecutorThread(threading.Event(), exit_event, deq, 0.01, (), {})
        print(thread.daemon, thread._FluxExecutorThread__work_remains())
        exit_event.set()
        print(thread._FluxExecutorThread__work_remains())
        deq.append(_SubmitPackage((spec("true"),), {}, FluxExecutorFuture(None)))
        print(thread._FluxExecutorThread__work_remains())
        deq.clear()
        thread.start()
        thread.join(60)
        print(thread.is_alive(), thread._FluxExecutorThread__running_user_futures)
        with FluxExecutor(threads=2) as executor:
            print(len(executor._executor_threads), len(executor._submission_queues))
            print(executor._broken_event.is_set(), executor._shutdown_event.is_set())
        print(executor._shutdown_event.is_set())
        """,
        instance.uri,
    )
    assert out == ["True True", "False", "True", "False set()", "2 2", "False False", "True"]
