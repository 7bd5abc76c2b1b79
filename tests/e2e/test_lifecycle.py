"""RFC 21 end to end: every event and transition, posted by a live instance, replayed.

One instance serves the module, with a prolog and an epilog configured so that
their events appear too. The last test replays every eventlog the instance
wrote and checks the result against what job-list reports of the live jobs.
"""

from __future__ import annotations

import errno
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pflux.api import Client
from pflux.client.handle import Handle
from pflux.errors import RPCError
from pflux.manager.job import Job
from pflux.spec.eventlog import Event, parse
from pflux.spec.fluid import JobID
from pflux.spec.states import State, apply
from support.instance import LiveInstance, jobspec, ok


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveInstance]:
    base = tmp_path_factory.mktemp("lifecycle")
    marks = base / "marks"
    marks.mkdir()
    config = base / "config.toml"
    prolog = f'test ! -e {marks}/fail-"$FLUX_JOB_ID"'
    config.write_text(
        "[job-manager.prolog]\n"
        f"command = {json.dumps(['sh', '-c', prolog])}\n"
        "[job-manager.epilog]\n"
        f"command = {json.dumps(['sh', '-c', f'echo $FLUX_JOB_ID >> {marks}/epilog'])}\n"
    )
    with LiveInstance(base / "state", "--config", str(config)) as live:
        live.marks = marks  # type: ignore[attr-defined]
        yield live


def events(client: Client, jobid: int) -> list[Event]:
    return list(client.events(jobid))


def names(client: Client, jobid: int) -> list[str]:
    return [e.name for e in events(client, jobid)]


def real(*command: str) -> dict[str, Any]:
    from pflux.api import jobspec_of

    return jobspec_of(list(command), environment={"PATH": "/usr/bin:/bin"})


def test_a_job_passes_through_every_state(client: Client) -> None:
    jobid = client.submit(real("true"))
    log = events(client, jobid)
    assert [e.name for e in log] == [
        "submit",
        "validate",
        "depend",
        "priority",
        "alloc",
        "prolog-start",
        "prolog-finish",
        "start",
        "finish",
        "release",
        "epilog-start",
        "epilog-finish",
        "free",
        "clean",
    ]
    ctx = {e.name: e.context for e in log}
    assert set(ctx["submit"] or {}) == {"urgency", "userid", "flags", "version"}
    submit = ctx["submit"] or {}
    assert (submit["urgency"], submit["flags"], submit["version"]) == (16, 0, 1)
    assert ctx["priority"] == {"priority": 16}
    assert ctx["finish"] == {"status": 0}
    assert ctx["release"] == {"ranks": "all", "final": True}
    assert ctx["prolog-finish"] == {"description": "job-manager.prolog", "status": 0}
    assert ctx["epilog-start"] == {"description": "job-manager.epilog"}
    assert (ctx["alloc"] or {})["annotations"]["sched"]["resource_summary"].startswith("rank0/")
    for name in ("validate", "depend", "start", "free", "clean"):
        assert ctx[name] is None, name
    times = [e.timestamp for e in log]
    assert times == sorted(times)
    assert client.wait(jobid).success


def test_the_epilog_ran_with_the_job_id(instance: LiveInstance, client: Client) -> None:
    jobid = client.submit(real("true"))
    client.wait(jobid)
    assert str(jobid) in (instance.marks / "epilog").read_text().split()  # type: ignore[attr-defined]


def test_a_failing_prolog_keeps_the_job_from_starting(
    instance: LiveInstance, client: Client
) -> None:
    jobid = client.submit(real("true"), urgency="hold")
    (instance.marks / f"fail-{jobid}").touch()  # type: ignore[attr-defined]
    client.urgency(jobid, "default")
    result = client.wait(jobid)
    seen = names(client, jobid)
    assert "start" not in seen
    assert seen[seen.index("prolog-finish") - 1] == "exception"  # raised first, as flux-core
    assert result.errstr.startswith("Fatal exception type=prolog prolog exited with code=1 on ")


def test_hold_then_release_goes_through_urgency_and_priority(client: Client) -> None:
    jobid = client.submit(jobspec(), urgency="hold")
    client.wait_event(jobid, "priority", match={"priority": 0})
    assert client.job_info(jobid).state == int(State.SCHED)
    assert client.urgency(jobid, "expedite") == 0
    event = client.wait_event(jobid, "priority", match={"priority": 4294967295})
    assert event.context == {"priority": 4294967295}
    log = events(client, jobid)
    urgency = next(e for e in log if e.name == "urgency")
    assert urgency.context is not None
    assert urgency.context["urgency"] == 31
    assert client.wait(jobid).success


def test_non_fatal_exceptions_leave_the_state_and_cancel_ends_the_job(client: Client) -> None:
    jobid = client.submit(jobspec("0"))  # runs until killed
    client.wait_event(jobid, "start")
    client.raise_exception(jobid, "warning", 3, "just so you know")
    assert client.job_info(jobid).state == int(State.RUN)
    client.cancel(jobid, "enough")
    result = client.wait(jobid)
    assert not result.success
    assert result.errstr == "Fatal exception type=cancel enough"
    excs = [e.context for e in events(client, jobid) if e.name == "exception"]
    assert [(c["type"], c["severity"]) for c in excs if c] == [("warning", 3), ("cancel", 0)]
    assert client.job_info(jobid).result == 4  # CANCELED


def test_memo_sets_and_removes_keys(client: Client) -> None:
    jobid = client.submit(jobspec(), urgency="hold")
    client.handle.call("job-manager.memo", {"id": int(jobid), "memo": {"a": 1, "b": "x"}})
    client.handle.call("job-manager.memo", {"id": int(jobid), "memo": {"a": None}})
    log = client.handle.call("job-info.lookup", {"id": int(jobid), "keys": ["eventlog"]})
    memos = [e.context for e in parse(log["eventlog"]) if e.name == "memo"]
    assert memos == [{"a": 1, "b": "x"}, {"a": None}]
    client.cancel(jobid)


def test_jobspec_update_on_a_pending_job(client: Client) -> None:
    jobid = client.submit(jobspec(), urgency="hold")
    client.handle.call(
        "job-manager.update", {"id": int(jobid), "updates": {"attributes.system.duration": 60}}
    )
    client.urgency(jobid, "default")
    alloc = client.wait_event(jobid, "alloc")
    assert alloc.name == "alloc"
    reply = client.handle.call("job-info.lookup", {"id": int(jobid), "keys": ["R"]})
    execution = json.loads(reply["R"])["execution"]
    assert execution["expiration"] - execution["starttime"] == pytest.approx(60, abs=0.01)
    update = next(e for e in events(client, jobid) if e.name == "jobspec-update")
    assert update.context == {"attributes.system.duration": 60}


def test_only_the_duration_can_be_updated_once_running(client: Client) -> None:
    jobid = client.submit(jobspec("0"))
    client.wait_event(jobid, "start")
    with pytest.raises(RPCError, match=r"update of attributes\.system\.job\.name not supported"):
        client.handle.call(
            "job-manager.update", {"id": int(jobid), "updates": {"attributes.system.job.name": "x"}}
        )
    client.cancel(jobid)


def test_set_flags_debug_posts_debug_events(client: Client) -> None:
    jobid = client.submit(jobspec(), urgency="hold")
    client.handle.call("job-manager.set-flags", {"id": int(jobid), "flags": ["debug"]})
    client.urgency(jobid, "default")
    client.wait(jobid)
    seen = names(client, jobid)
    assert "set-flags" in seen
    assert seen.index("debug.alloc-request") < seen.index("alloc")
    assert seen.index("debug.free-request") < seen.index("free")


def test_a_refused_job_is_invalidated_and_removed(uri: str, client: Client) -> None:
    with Handle(uri) as journal_handle:
        journal = journal_handle.rpc("job-manager.events-journal", {}, streaming=True)
        journal_handle.flush()
        bad = jobspec()
        bad["attributes"]["system"]["dependencies"] = [{"scheme": "nosuch", "value": "x"}]
        with pytest.raises(RPCError, match='dependency scheme "nosuch" not supported'):
            client.submit(bad)
        invalidated = None
        while invalidated is None:
            for entry in journal.get(timeout=10)["events"]:
                if entry["entry"]["name"] == "invalidate":
                    invalidated = entry["id"]
    with pytest.raises(RPCError) as info:
        client.handle.call("kvs.get", {"key": f"{JobID(invalidated).kvs}.eventlog"})
    assert info.value.errnum == errno.ENOENT


def test_job_states_and_results_by_name(uri: str, client: Client) -> None:
    failing = client.submit(real("false"))
    assert client.wait(failing).errstr == "task(s) exited with exit code 1"
    out = ok(uri, "jobs", "-a", "-n", "-o", "{id} {status_abbrev}")
    assert f"{failing} F" in out


def test_replaying_every_eventlog_reproduces_the_live_state(client: Client) -> None:
    """Run last: all the module's jobs, read back from the KVS, agree with job-list."""
    client.drain()
    live = {job.id: job for job in client.list_jobs(attrs=["state", "result"])}
    assert live
    for jobid, job in live.items():
        text = client.handle.call("job-info.lookup", {"id": jobid, "keys": ["eventlog"]})
        replayed = Job(jobid)
        for event in parse(text["eventlog"]):
            apply(replayed, event)
        assert int(replayed.state) == job.state, JobID(jobid)
        codes = {"COMPLETED": 1, "FAILED": 2, "CANCELED": 4, "TIMEOUT": 8}
        assert codes[replayed.result or ""] == job.result, JobID(jobid)


def test_a_socket_path_that_is_not_an_instance(tmp_path: Path) -> None:
    from pflux.errors import NoInstanceError

    with pytest.raises(NoInstanceError, match="cannot connect"):
        Client(f"local://{tmp_path}/nothing")


def test_without_an_epilog_the_end_of_a_job_is_one_commit(tmp_path: Path) -> None:
    """With no epilog to run first, free and clean join the batch of the final release
    (AllocClient.free): a watcher of the eventlog sees the three in one append, and a
    debug job's free-request once, just before free."""
    with LiveInstance(tmp_path / "state") as live, Client(live.uri) as client:
        jobid = client.submit(jobspec(), urgency="hold", debug=True)
        key = f"{JobID(jobid).kvs}.eventlog"
        watch = client.handle.rpc("kvs.watch", {"key": key, "append": True}, streaming=True)
        appends = [watch.get(timeout=10)["value"]]
        client.urgency(jobid, "default")
        while '"clean"' not in appends[-1]:
            appends.append(watch.get(timeout=10)["value"])
        last = [Event.from_line(line).name for line in appends[-1].splitlines()]
        assert last[-4:] == ["release", "debug.free-request", "free", "clean"]
        assert names(client, jobid).count("debug.free-request") == 1
