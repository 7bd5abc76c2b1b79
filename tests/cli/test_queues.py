"""Named queues (``[queues]``, ``[policy]``) against a live instance of four nodes with
properties, with flux-core's expected messages (its t2240, t2241, t2243 tests): a job lands
only on its queue's ranks, the default queue and duration are applied, a queue not
configured is refused, a stopped queue holds its jobs while another's run, and the queues'
state survives a restart."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pflux.api import Client
from pflux.spec.fluid import JobID
from support.instance import LiveInstance, fails, ok, start_with_config
from support.screen import screen
from support.terminal import Terminal

QUEUES = """
[[resource.config]]
hosts = "node[0-1]"
cores = "0-1"
properties = ["batch"]

[[resource.config]]
hosts = "node[2-3]"
cores = "0-1"
properties = ["debug"]

[queues.batch]
requires = ["batch"]

[queues.debug]
requires = ["debug"]
policy.limits.duration = "1h"
policy.jobspec.defaults.system.duration = "5m"

[policy.jobspec.defaults.system]
queue = "batch"
duration = "10m"
"""
HOLD = "--setattr=system.exec.test.run_duration=0s"  # runs until canceled


def start(where: Path, toml: str = QUEUES) -> LiveInstance:
    config = where / "queues.toml"
    config.write_text(toml)
    return LiveInstance(where / "state", "--config", str(config), cores=None)


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveInstance]:
    with start(tmp_path) as instance:
        yield instance


def _jobspec(uri: str, jobid: str) -> dict[str, object]:
    spec: dict[str, object] = json.loads(ok(uri, "job", "info", jobid, "jobspec"))
    return spec


def _system(uri: str, jobid: str) -> dict[str, object]:
    attributes = _jobspec(uri, jobid)["attributes"]
    assert isinstance(attributes, dict)
    system: dict[str, object] = attributes["system"]
    return system


def test_jobs_land_only_on_their_queues_ranks(live: LiveInstance) -> None:
    uri = live.uri
    out = ok(uri, "run", "-N2", "-q", "debug", "hostname")  # runs on this machine
    assert len(out.splitlines()) == 2
    debug = ok(uri, "job", "last").strip()
    ok(uri, "run", "-N2", "true")  # the default queue, batch
    batch = ok(uri, "job", "last").strip()
    ok(uri, "run", "--queue=debug", "-n3", "--requires=rank:2-3", "true")
    both = ok(uri, "job", "last").strip()
    rows = ok(uri, "jobs", "-a", "-n", "-o", "{id.f58} {queue} {nodelist}").splitlines()
    where = {jobid: (queue, nodes) for jobid, queue, nodes in (r.split() for r in rows)}
    assert where[debug] == ("debug", "node[2-3]")
    assert where[batch] == ("batch", "node[0-1]")
    assert where[both] == ("debug", "node[2-3]")
    # the queue's requires are ANDed with the job's own constraints
    assert _system(uri, both)["constraints"] == {
        "and": [{"ranks": ["2-3"]}, {"properties": ["debug"]}]
    }
    # a job asking for more than its queue's ranks have is denied, not placed elsewhere
    assert "unsatisfiable request" in fails(uri, "run", "-q", "debug", "-N3", "true")
    out = ok(uri, "jobs", "-a", "-n", "--queue=debug", "-o", "{queue}")
    assert set(out.split()) == {"debug"}


def test_defaults_are_applied_and_unknown_queues_refused(live: LiveInstance) -> None:
    uri = live.uri
    jobid = ok(uri, "submit", "true").strip()
    system = _system(uri, jobid)
    assert (system["queue"], system["duration"]) == ("batch", 600.0)
    assert system["constraints"] == {"properties": ["batch"]}
    jobid = ok(uri, "submit", "-q", "debug", "-t", "2m", "true").strip()
    assert (_system(uri, jobid)["queue"], _system(uri, jobid)["duration"]) == ("debug", 120.0)
    jobid = ok(uri, "submit", "-q", "debug", "true").strip()
    assert _system(uri, jobid)["duration"] == 300.0  # the queue's own default
    assert "Invalid queue 'nope' specified" in fails(uri, "submit", "-q", "nope", "true")
    assert "Invalid queue 'nope' specified" in fails(uri, "run", "--queue=nope", "true")
    assert fails(uri, "submit", "-q", "debug", "-t", "2h", "true").endswith(
        "requested duration (2h) exceeds policy limit of 1h for queue debug\n"
    )
    # no duration is the default's, as in flux-core
    jobid = ok(uri, "submit", "-q", "debug", "--setattr=system.duration=0", "true").strip()
    assert _system(uri, jobid)["duration"] == 300.0


def test_with_no_default_queue_a_job_must_name_one(tmp_path: Path) -> None:
    toml = QUEUES.replace('queue = "batch"\n', "")
    with start(tmp_path, toml) as live:
        assert "no queue specified" in fails(live.uri, "submit", "true")
        assert ok(live.uri, "run", "-q", "batch", "echo", "ran") == "ran\n"


def test_a_stopped_queue_holds_its_jobs_while_another_runs(live: LiveInstance) -> None:
    uri = live.uri
    with Client(uri) as client:
        assert ok(uri, "queue", "stop", "-q", "debug", "-m", "maintenance") == (
            "debug: Scheduling is stopped: maintenance\n"
        )
        held = JobID.parse(ok(uri, "submit", "-q", "debug", "true").strip())
        ran = client.wait(JobID.parse(ok(uri, "submit", "-q", "batch", "true").strip()))
        assert ran.success
        assert ok(uri, "jobs", "-n", "-o", "{id.f58} {state}", str(held)).split() == [
            held.f58,
            "SCHED",
        ]
        assert ok(uri, "queue", "start", "-q", "debug") == "debug: Scheduling is started\n"
        assert client.wait(held).success


def test_queue_commands_name_each_queue(live: LiveInstance) -> None:
    uri = live.uri
    assert ok(uri, "queue", "status") == (
        "batch: Job submission is enabled\n"
        "batch: Scheduling is started\n"
        "debug: Job submission is enabled\n"
        "debug: Scheduling is started\n"
    )
    assert ok(uri, "queue", "status", "-q", "debug") == (
        "debug: Job submission is enabled\ndebug: Scheduling is started\n"
    )
    assert fails(uri, "queue", "stop") == (
        "pflux-queue: ERROR: Named queues are defined. Specify queues or use --all.\n"
    )
    assert "enable: Use --all to apply this command to all queues" in fails(uri, "queue", "disable")
    assert "'nope' is not a valid queue" in fails(uri, "queue", "status", "-q", "nope")
    assert ok(uri, "queue", "disable", "-q", "debug", "-m", "closed") == (
        "debug: Job submission is disabled: closed\n"
    )
    assert "job submission to debug is disabled: closed" in fails(
        uri, "submit", "-q", "debug", "true"
    )
    assert ok(uri, "queue", "stop", "-a", "--quiet") == ""
    assert ok(uri, "queue", "list") == (
        "QUEUE    EN ST TDEFAULT   TLIMIT     NNODES     NCORES      NGPUS\n"
        "batch*    ✔  ✗      10m      inf      0-inf      0-inf      0-inf\n"
        "debug     ✗  ✗       5m       1h      0-inf      0-inf      0-inf\n"
    )
    assert ok(uri, "queue", "list", "-q", "debug", "-no", "{queue} {queuem}") == "debug debug\n"
    assert "No such queue: nope" in fails(uri, "queue", "list", "-q", "nope")
    ok(uri, "queue", "start", "--all")
    ok(uri, "queue", "enable", "--all")


def test_the_queues_state_survives_a_restart(tmp_path: Path) -> None:
    with start(tmp_path) as live:
        ok(live.uri, "queue", "stop", "-q", "debug", "-m", "for the night")
        ok(live.uri, "queue", "disable", "-q", "batch", "-m", "full")
        held = ok(live.uri, "submit", "-q", "debug", "true").strip()
    with start(tmp_path) as live:
        assert ok(live.uri, "queue", "status") == (
            "batch: Job submission is disabled: full\n"
            "batch: Scheduling is started\n"
            "debug: Job submission is enabled\n"
            "debug: Scheduling is stopped: for the night\n"
        )
        assert ok(live.uri, "jobs", "-n", "-o", "{state}", held) == "SCHED\n"
        ok(live.uri, "queue", "start", "-q", "debug")
        assert ok(live.uri, "job", "wait-event", held, "clean")


def test_running_jobs_are_canceled_at_shutdown_with_named_queues(tmp_path: Path) -> None:
    with start(tmp_path) as live:
        jobid = ok(live.uri, "submit", HOLD, "true").strip()
        ok(live.uri, "job", "wait-event", jobid, "start")
        assert live.stop() == 0
    with start(tmp_path) as live:
        assert "instance shutdown" in ok(live.uri, "job", "eventlog", jobid)
        assert "Scheduling is started" in ok(live.uri, "queue", "status", "-q", "batch")


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("[queues.batch]\ncolour = 1\n", "[queues.batch] colour: unknown key"),
        ("[queues]\nbatch = 1\n", "[queues.batch]: must be a table"),
        ('[queues.batch]\nrequires = "x"\n', "requires: must be an array of property names"),
        (
            '[queues.batch]\n[policy.jobspec.defaults.system]\nqueue = "debug"\n',
            "queue: default queue 'debug' must be in [queues]",
        ),
        ('[policy.limits]\nduration = "5min"\n', "[policy.limits] duration: invalid Flux"),
        ("[policy.limits]\njob-size.max.nnodes = 2\n", "[policy.limits] job-size: unknown key"),
        ("[policy.access]\nallow-user = []\n", "[policy] access: unknown key"),
        (
            '[[resource.config]]\nhosts = "n0"\ncores = "0"\nproperties = ["a&b"]\n',
            "properties: invalid character '&'",
        ),
    ],
)
def test_bad_queue_configuration_is_refused_naming_the_key(
    tmp_path: Path, toml: str, message: str
) -> None:
    proc = start_with_config(tmp_path, toml)
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr


def test_a_pending_jobs_queue_is_updated_with_its_constraints(live: LiveInstance) -> None:
    uri = live.uri
    ok(uri, "queue", "stop", "--all", "--quiet")
    try:
        jobid = ok(uri, "submit", "-q", "batch", "true").strip()
        ok(uri, "update", jobid, "queue=debug")
        system = _system(uri, jobid)
        assert (system["queue"], system["constraints"]) == ("debug", {"properties": ["debug"]})
        assert "job queue is already set to debug" in fails(uri, "update", jobid, "queue=debug")
        assert "'nope' is not a valid queue" in fails(uri, "update", jobid, "queue=nope")
        ok(uri, "queue", "disable", "-q", "batch", "--quiet")
        assert "queue batch is currently disabled" in fails(uri, "update", jobid, "queue=batch")
        ok(uri, "queue", "enable", "-q", "batch", "--quiet")
        own = ok(uri, "submit", "-q", "batch", "--requires=rank:0", "true").strip()
        assert "job appears to have non-queue constraints, unable to update queue to debug" in (
            fails(uri, "update", own, "queue=debug")
        )
    finally:
        ok(uri, "queue", "start", "--all", "--quiet")
    ok(uri, "job", "wait-event", jobid, "clean")
    rows = ok(uri, "jobs", "-a", "-n", "-o", "{queue} {nodelist}", jobid)
    assert rows.split()[0] == "debug"
    assert rows.split()[1] in ("node2", "node3")


def test_top_shows_one_queues_jobs(live: LiveInstance) -> None:
    uri = live.uri
    debug = JobID.parse(ok(uri, "submit", "-q", "debug", "--job-name=indebug", HOLD, "true"))
    batch = JobID.parse(ok(uri, "submit", "-q", "batch", "--job-name=inbatch", HOLD, "true"))
    with Client(uri) as client:
        client.wait_event(debug, "start")
        client.wait_event(batch, "start")
        with Terminal(uri, "top", "--test-exit", "-q", "debug", TERM="xterm") as term:
            assert term.wait() == 0
            shown = "\n".join(screen(term.text, *term.size))
        assert "indebug" in shown
        assert "inbatch" not in shown
        assert "--queue: 'nope' is not a valid queue" in fails(uri, "top", "-q", "nope", rc=2)
        client.cancel(debug)
        client.cancel(batch)
