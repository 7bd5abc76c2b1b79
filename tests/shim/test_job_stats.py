"""Job statistics against a live instance of its own (the counts are the instance's):
``job-list.job-stats`` as flux-core's, ``flux job stats`` printing it,
``flux.job.stats.JobStats`` reading it, synchronously and from the reactor, and
``flux jobs --stats``, ``--stats-only``, ``--color`` and ``--include`` over the same known
jobs."""

from __future__ import annotations

import errno
import json
import socket
from textwrap import dedent

import pytest

from pflux.api import Client
from pflux.errors import RPCError
from support.instance import LiveInstance, fails, held, jobspec, ok, pflux, quiesce
from support.shim import flux_output


@pytest.fixture(scope="module")
def jobs(instance: LiveInstance) -> LiveInstance:
    """Two completed jobs, one failed, one canceled and one pending."""
    with Client(instance.uri) as client:
        for spec in (jobspec(), jobspec(), jobspec(wait_status=256)):
            client.wait(client.submit(spec, waitable=True))
        canceled = held(client)
        client.cancel(canceled)
        client.wait_event(canceled, "clean")
        held(client)
    return instance


def test_flux_job_stats_prints_the_counts_as_json(jobs: LiveInstance) -> None:
    out = ok(jobs.uri, "job", "stats")
    assert out.count("\n") == 1  # one compact line, as flux's
    assert " " not in out
    assert json.loads(out) == {
        "job_states": {
            "depend": 0,
            "priority": 0,
            "sched": 1,
            "run": 0,
            "cleanup": 0,
            "inactive": 4,
            "total": 5,
        },
        "successful": 2,
        "failed": 1,
        "canceled": 1,
        "timeout": 0,
        "inactive_purged": 0,
        "queues": [],
    }


def test_job_stats_takes_no_fields(jobs: LiveInstance) -> None:
    with Client(jobs.uri) as client, pytest.raises(RPCError) as caught:
        client.handle.call("job-list.job-stats", {"queue": "batch"})
    assert caught.value.errnum == errno.EPROTO
    assert caught.value.errstr == "job-list.job-stats: takes no fields, got {'queue': 'batch'}"
    with Client(jobs.uri) as client, pytest.raises(RPCError) as caught:
        client.handle.rpc("job-list.job-stats", {}, streaming=True).get()
    assert caught.value.errstr == "job-list.job-stats: streaming is not supported"


def test_jobstats_reads_the_counts_now_or_from_the_reactor(jobs: LiveInstance) -> None:
    out = flux_output(
        dedent(
            """
            import flux
            from flux.job.stats import JobStats
            h = flux.Flux()
            fresh = JobStats(h)
            print(fresh.total, fresh.pending, fresh.failed)
            s = JobStats(h).update_sync()
            print(s.total, s.pending, s.running, s.active, s.inactive)
            print(s.successful, s.failed, s.canceled, s.timeout, s.inactive_purged)
            seen = []
            later = JobStats(h)
            later.update(lambda stats, tag: seen.append((tag, stats.sched)), tag="cb")
            h.reactor_run()
            print(seen)
            try:
                JobStats(h, queue="batch").update_sync()
            except ValueError as exc:
                print(exc)
            """
        ),
        jobs.uri,
    )
    assert out.splitlines() == [
        "-1 -1 -1",
        "5 1 0 1 4",
        "2 2 1 0 0",  # failed counts the canceled job too, as flux-core's
        "[('cb', 1)]",
        "no stats available for queue batch",
    ]


def test_flux_jobs_stats_and_stats_only(jobs: LiveInstance) -> None:
    line = "0 running, 2 completed, 2 failed, 1 pending, 0 inactive purged\n"
    out = ok(jobs.uri, "jobs", "--stats", "-n", "-o", "{id.dec}")
    assert out.splitlines()[0] + "\n" == line
    assert len(out.splitlines()) == 2  # then the pending job
    proc = pflux(jobs.uri, "jobs", "--stats-only")
    assert (proc.returncode, proc.stdout) == (0, line)  # a job is active
    assert fails(jobs.uri, "jobs", "--stats", "--json") == (
        "pflux-jobs: ERROR: --json incompatible with --stats or --stats-only\n"
    )
    assert fails(jobs.uri, "jobs", "--stats-only", "-q", "batch") == (
        "pflux-jobs: ERROR: error retrieving job stats: no stats available for queue batch\n"
    )


def test_stats_only_fails_once_no_job_is_active(jobs: LiveInstance) -> None:
    with Client(jobs.uri) as client:
        quiesce(client)  # the pending job is canceled: failed, as flux counts it
    proc = pflux(jobs.uri, "jobs", "--stats-only")
    assert proc.returncode == 1
    assert proc.stdout == "0 running, 2 completed, 3 failed, 0 pending, 0 inactive purged\n"


def test_flux_jobs_color_by_result(jobs: LiveInstance, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = ok(jobs.uri, "jobs", "-a", "-n", "--color=never", "-o", "{result}")
    colors = {"COMPLETED": "\033[01;32m", "FAILED": "\033[01;31m", "CANCELED": "\033[37m"}
    assert sorted(plain.split()) == ["CANCELED", "CANCELED", "COMPLETED", "COMPLETED", "FAILED"]
    expected = "".join(f"{colors[result]}{result}\n\033[0;0m" for result in plain.split())
    assert ok(jobs.uri, "jobs", "-a", "-n", "--color", "-o", "{result}") == expected
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\033" not in ok(jobs.uri, "jobs", "-a")  # nor is stdout a terminal
    assert ok(jobs.uri, "jobs", "-a", "-n", "--color=always", "-o", "{result}") == expected
    assert "invalid choice: 'sometimes'" in fails(jobs.uri, "jobs", "--color=sometimes", rc=2)


def test_flux_jobs_include_lists_the_jobs_on_ranks_or_hosts(jobs: LiveInstance) -> None:
    ran = ok(jobs.uri, "jobs", "-a", "-n", "-f", "completed,failed", "-o", "{id.f58}").split()
    assert len(ran) == 3  # the canceled jobs never ran
    assert ok(jobs.uri, "jobs", "-a", "-n", "-i", "0", "-o", "{id.f58}").split() == ran
    host = socket.gethostname()
    assert ok(jobs.uri, "jobs", "-a", "-n", "--include", host, "-o", "{id.f58}").split() == ran
    assert ok(jobs.uri, "jobs", "-a", "-n", "-i", "3-5", "-o", "{id.f58}") == ""
    assert fails(jobs.uri, "jobs", "-i", "node[1-") == (
        "pflux-jobs: ERROR: -i/--include: invalid targets: node[1-\n"
    )
