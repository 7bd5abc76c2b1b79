"""``pflux.manager.queues``: the anonymous queue or the named ones, their state, what is
stored and read back, and flux-core's errors for a queue not configured."""

from __future__ import annotations

import pytest

from pflux.errors import RPCError
from pflux.manager.queues import Queues


def spec(queue: str | None = None) -> dict[str, object]:
    return {"attributes": {"system": {} if queue is None else {"queue": queue}}}


def test_the_anonymous_queue_refuses_names() -> None:
    queues = Queues([])
    assert queues.lookup(None) is queues.anon
    with pytest.raises(RPCError, match="'batch' is not a valid queue"):
        queues.lookup("batch")
    assert queues.submit_error(spec("batch")) == "'batch' is not a valid queue"
    assert queues.submit_error(spec()) is None
    queues.anon.set_enable(False, "closed")
    assert queues.submit_error(spec()) == "job submission is disabled: closed"
    assert queues.stored() == [{"enable": False, "disable_reason": "closed", "start": True}]


def test_named_queues_need_a_name_or_all() -> None:
    queues = Queues(["batch", "debug"])
    with pytest.raises(RPCError, match="a named queue is required"):
        queues.lookup(None)
    with pytest.raises(RPCError, match="Use --all to apply this command to all queues"):
        queues.targets(None, every=False)
    assert [q.name for q in queues.targets(None, every=True)] == ["batch", "debug"]
    assert queues.submit_error(spec()) == "a named queue is required"
    queues.named["debug"].set_enable(False, "closed")
    assert queues.submit_error(spec("debug")) == "job submission to debug is disabled: closed"
    assert queues.submit_error(spec("batch")) is None


def test_started_follows_the_jobs_own_queue() -> None:
    queues = Queues(["batch", "debug"])
    queues.named["debug"].set_start(False, "", nocheckpoint=False)
    assert queues.started(spec("batch"))
    assert not queues.started(spec("debug"))
    assert not queues.started(spec("gone"))  # a queue no longer configured: held


def test_state_is_stored_and_restored_and_unstored_stops_are_not() -> None:
    queues = Queues(["batch", "debug"])
    queues.named["debug"].set_start(False, "night", nocheckpoint=False)
    queues.named["batch"].set_start(False, "shutdown", nocheckpoint=True)
    stored = queues.stored()
    assert stored == [
        {"name": "batch", "enable": True, "start": True},
        {"name": "debug", "enable": True, "start": False, "stop_reason": "night"},
    ]
    again = Queues(["debug", "other"])
    again.restore([*stored, "junk", {"name": 3}])
    assert again.named["debug"].status() == {
        "enable": True,
        "start": False,
        "stop_reason": "night",
    }
    assert again.named["other"].status() == {"enable": True, "start": True}
