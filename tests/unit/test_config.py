"""``pflux.broker.config``: every table and key of the configuration is one a service reads."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.broker.config import ConfigError, check_known

DECLARED = {
    "exec": ("kill-timeout", "term-signal", "kill-signal"),
    "kvs": ("journal_mode", "sync"),
    "job-manager": (),
    "job-manager.prolog": ("command", "timeout"),
    "resource": ("config", "cores"),
}


def test_known_tables_and_keys_pass() -> None:
    check_known(
        {
            "kvs": {"sync": "full"},
            "job-manager": {"prolog": {"command": ["true"]}},
            "resource": {"config": [{"hosts": "n1"}]},  # the entries are the scheduler's
        },
        DECLARED,
    )


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"exce": {}}, "[exce]: unknown table (did you mean [exec]?)"),
        (
            {"queues": {}},
            "[queues]: unknown table (known: [exec], [job-manager], [kvs], [resource])",
        ),
        ({"kvs": {"synk": "full"}}, "[kvs] synk: unknown key (did you mean sync?)"),
        ({"kvs": {"x": 1}}, "[kvs] x: unknown key (known: journal_mode, sync)"),
        ({"kvs": 3}, "[kvs]: must be a table, got 3"),
        (
            {"job-manager": {"prolgo": {}}},
            "[job-manager] prolgo: unknown key (did you mean prolog?)",
        ),
        (
            {"job-manager": {"prolog": {"comand": ["x"]}}},
            "[job-manager.prolog] comand: unknown key (did you mean command?)",
        ),
        ({"job-manager": {"prolog": []}}, "[job-manager.prolog]: must be a table, got []"),
    ],
)
def test_unknown_tables_and_keys_are_refused(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_known(config, DECLARED)
    assert str(info.value).startswith(message)


KEYS = st.sampled_from(sorted(DECLARED["kvs"]))
NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_-", min_size=1, max_size=12)


@given(known=st.dictionaries(KEYS, st.integers()), extra=NAMES)
def test_a_table_passes_exactly_when_every_key_is_declared(
    known: dict[str, int], extra: str
) -> None:
    check_known({"kvs": known}, DECLARED)
    if extra in DECLARED["kvs"]:
        return
    with pytest.raises(ConfigError, match=rf"^\[kvs\] {re.escape(extra)}: unknown key"):
        check_known({"kvs": {**known, extra: 1}}, DECLARED)


QUEUED = {**DECLARED, "queues": (), "queues.*": ("requires",), "queues.*.policy": ("x",)}


def test_a_star_in_a_path_stands_for_any_table_name() -> None:
    check_known({"queues": {"batch": {"requires": []}, "debug": {"policy": {"x": 1}}}}, QUEUED)
    with pytest.raises(ConfigError, match=r"^\[queues.debug\] colour: unknown key"):
        check_known({"queues": {"debug": {"colour": 1}}}, QUEUED)
    with pytest.raises(ConfigError, match=r"^\[queues.debug.policy\] y: unknown key"):
        check_known({"queues": {"debug": {"policy": {"y": 1}}}}, QUEUED)
    with pytest.raises(ConfigError, match=r"^\[queues.debug\]: must be a table, got 1"):
        check_known({"queues": {"debug": 1}}, QUEUED)
