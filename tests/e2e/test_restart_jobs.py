"""What a restart must keep of pending and ended jobs: a held job's priority event
after ``flux-restart`` (RFC 21), memos (``{user.KEY}``) and ``pflux job last``."""

from __future__ import annotations

from pathlib import Path

from pflux.api import Client
from pflux.spec.eventlog import Event
from support.instance import LiveInstance, jobspec, ok


def after_restart(client: Client, jobid: int) -> list[Event]:
    """The job's events from ``flux-restart`` on, once the job manager has nothing in flight."""
    client.handle.call("job-manager.quiescent", {})
    events = list(client.events(jobid, follow=False))
    return events[[event.name for event in events].index("flux-restart") :]


def test_pending_and_ended_jobs_across_a_restart(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with LiveInstance(state, cores=1) as first, Client(first.uri) as client:
        ended = client.submit(jobspec("0"))
        client.wait_event(ended, "start")
        ok(first.uri, "job", "memo", str(ended), "note=kept")
        client.cancel(ended)
        client.wait(ended)
        held = client.submit(jobspec(), urgency="hold")
        client.wait_event(held, "priority")
        ok(first.uri, "job", "memo", str(held), "a.b=1")
        last = ok(first.uri, "job", "last", "[:]").split()
        assert last == [held.f58, ended.f58]
        assert first.stop() == 0
    with LiveInstance(state, cores=1) as second, Client(second.uri) as client:
        restarted = after_restart(client, held)
        assert [(e.name, e.context) for e in restarted] == [
            ("flux-restart", None),
            ("priority", {"priority": 0}),
        ]
        shown = ok(second.uri, "jobs", "-n", "-o", "{state} {user.a.b} {user.note}", str(held))
        assert shown.split() == ["SCHED", "1"]
        assert ok(second.uri, "jobs", "-n", "-o", "{user.note}", str(ended)).strip() == "kept"
        assert ok(second.uri, "job", "last", "2").split() == last
        assert ok(second.uri, "job", "last").split() == [held.f58]
        client.urgency(held, "default")  # held, not stuck: it runs once released
        assert client.wait(held).success
        assert second.stop() == 0
