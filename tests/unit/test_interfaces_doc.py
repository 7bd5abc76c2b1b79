"""docs/interfaces.md names every RPC topic a service registers, and no other.

The services are those an instance loads (the broker's own, its log ring, every
entry of its service and module lists, the simulator), so a service added to an
instance is checked without this test changing.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from pflux.broker import instance, rankmain
from pflux.broker.attrset import AttrService
from pflux.broker.event import EventService
from pflux.broker.logbuf import LogService
from pflux.broker.router import Service

DOC = Path(__file__).parents[2] / "docs" / "interfaces.md"

# the first cell of a table row: `topic`, maybe followed by a note such as (streaming)
ROW = re.compile(r"^\| `([a-z][a-z0-9-]*\.[a-z0-9.-]+)`", re.MULTILINE)

# documented topics no service class registers, each with the reason
_OVERLAY = "the overlay's own message between brokers, handled by pflux.broker.overlay"
SERVED_ELSEWHERE: dict[str, str] = {
    f"overlay.{name}": _OVERLAY
    for name in ("hello", "lost", "heartbeat", "rehello", "cancel", "shutdown")
}


def _class(path: str) -> type[Service]:
    module, _, name = path.partition(":")
    cls: type[Service] = getattr(importlib.import_module(module), name)
    return cls


def service_classes() -> list[type[Service]]:
    paths = [
        *instance.SERVICES,
        instance.SIMULATOR,
        *instance.MODULES.values(),
        *rankmain.RANK_SERVICES,
    ]
    return [
        instance.BrokerService,
        instance.ConfigService,
        instance.ModuleService,
        LogService,
        EventService,
        AttrService,
        *map(_class, paths),
    ]


def registered_topics() -> set[str]:
    """``<service>.<method>`` for every ``@method`` of every service class."""
    topics = set()
    for cls in service_classes():
        assert cls.name, f"{cls.__qualname__} has no service name"
        for attr in dir(cls):
            name = getattr(getattr(cls, attr), "__pflux_method__", None)
            if name is not None:
                topics.add(f"{cls.name}.{name}")
    return topics


def documented_topics() -> set[str]:
    return set(ROW.findall(DOC.read_text()))


def test_the_services_are_found() -> None:
    topics = registered_topics()
    for topic in ("broker.ping", "log.dmesg", "kvs.commit", "job-list.list", "simulator.start"):
        assert topic in topics


def test_every_registered_topic_is_documented() -> None:
    missing = sorted(registered_topics() - documented_topics())
    assert not missing, f"topics not in docs/interfaces.md: {missing}"


def test_every_documented_topic_is_registered() -> None:
    unknown = documented_topics() - registered_topics() - SERVED_ELSEWHERE.keys()
    assert not sorted(unknown), f"docs/interfaces.md names topics no service has: {unknown}"


def test_the_allow_list_names_only_documented_unregistered_topics() -> None:
    for topic in SERVED_ELSEWHERE:
        assert topic in documented_topics()
        assert topic not in registered_topics()


def test_a_table_row_is_read_as_its_topic() -> None:
    text = "| `job-manager.history.get` | `{slice}` | x |\n| `kvs.watch` (streaming) | a | b |\n"
    assert ROW.findall(text) == ["job-manager.history.get", "kvs.watch"]


# a row whose first cell marks its topic as serving guests (``@method(..., guest=True)``)
GUEST_ROW = re.compile(r"^\| `([a-z][a-z0-9-]*\.[a-z0-9.-]+)`[^|]*\*\*\(guest\)\*\*", re.MULTILINE)


def test_the_topics_marked_guest_are_those_whose_handlers_serve_guests() -> None:
    served = set()
    for cls in service_classes():
        served.update(f"{cls.name}.{name}" for name in cls.guest_methods())
    assert served
    assert set(GUEST_ROW.findall(DOC.read_text())) == served
