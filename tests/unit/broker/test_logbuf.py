"""The log ring: what it keeps of a log record, how much, and what it takes from a module."""

from __future__ import annotations

import logging

import pytest

from pflux.broker.logbuf import LogRing, entry_of, severity
from pflux.errors import RPCError
from pflux.protocol.broker import LogEntry
from pflux.protocol.decode import decode


def record(
    level: int, msg: str, *args: object, name: str = "pflux.job-manager"
) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, msg, args, None)


def test_severity_is_syslogs() -> None:
    assert [severity(x) for x in (50, 40, 30, 20, 10)] == [2, 3, 4, 6, 7]
    assert severity(25) == 6  # between INFO and WARNING: INFO's
    assert severity(5) == 7


def test_entry_of_a_record() -> None:
    entry = entry_of(record(logging.WARNING, "job %s: %s", "ƒ1", "late"))
    assert entry["name"] == "job-manager"
    assert (entry["severity"], entry["rank"], entry["message"]) == (4, 0, "job ƒ1: late")
    assert decode("log.append", entry, LogEntry).message == "job ƒ1: late"
    for bad, rule in (
        ({**entry, "severity": 8}, "severity: expected int <= 7"),
        ({**entry, "message": 1}, "message: expected str, got int"),
        ([entry], "payload: expected object, got array"),
    ):
        with pytest.raises(RPCError, match=f"^log.append: {rule}$"):
            decode("log.append", bad, LogEntry)


def test_the_ring_keeps_the_last_entries_and_tells_followers() -> None:
    ring = LogRing(size=3)
    seen: list[str] = []
    ring.followers.add(lambda entry: seen.append(entry["message"]))
    for n in range(5):
        ring.emit(record(logging.INFO, "line %d", n))
    assert [e["message"] for e in ring.backlog()] == ["line 2", "line 3", "line 4"]
    assert seen == [f"line {n}" for n in range(5)]
    ring.clear()
    assert ring.backlog() == []
