"""flux.message's encoders and a message watcher's matching, with hypothesis: any JSON
payload comes back as it was set, through the wire form too, and a watcher matches
exactly the type, topic glob and matchtag it names. The package is loaded in this
process for this module only, and unloaded after."""

from __future__ import annotations

import fnmatch
import importlib
import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support.shim import SHIM_PYTHON

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
topics = st.text(st.sampled_from("abc.-_*?"), min_size=1, max_size=12)
types = st.sampled_from((1, 2, 4, 8))


@pytest.fixture(scope="module")
def message() -> Iterator[Any]:
    sys.path.insert(0, str(SHIM_PYTHON))
    try:
        yield importlib.import_module("flux.message")
    finally:
        sys.path.remove(str(SHIM_PYTHON))
        for name in [m for m in sys.modules if m == "flux" or m.startswith("flux.")]:
            del sys.modules[name]


@settings(max_examples=200)
@given(inner=json_values, topic=topics)
def test_a_payload_comes_back_as_set_and_through_the_wire(
    message: Any, inner: Any, topic: str
) -> None:
    assert message.Message.from_event_encode(topic, None).payload_str is None
    value = {"v": inner}  # a str payload is JSON text, sent as it is (flux-core's rule)
    msg = message.Message.from_event_encode(topic, value)
    assert msg.payload == value
    assert message.Message.from_event_encode(topic, msg.payload_str).payload == value
    assert json.loads(msg.payload_str) == value
    wire = {"type": 4, "topic": topic, "matchtag": 7, "payload": msg._wire_payload()}
    back = message.Message._from_wire(json.loads(json.dumps(wire)))
    assert (back.type, back.topic, back.matchtag, back.payload) == (4, topic, 7, value)


@settings(max_examples=300)
@given(
    kinds=st.tuples(types, st.integers(0, 15)),
    names=st.tuples(topics, topics),
    tags=st.tuples(st.integers(0, 3), st.integers(0, 3)),
)
def test_a_watcher_matches_exactly_its_type_glob_and_tag(
    message: Any, kinds: tuple[int, int], names: tuple[str, str], tags: tuple[int, int]
) -> None:
    (mtype, mask), (topic, glob), (tag, want) = kinds, names, tags
    msg = message.Message(mtype)
    msg.topic = topic
    msg.matchtag = tag
    watcher = message.MessageWatcher(None, mask, lambda *a: None, glob, want)
    expected = bool(mtype & mask) and want in (0, tag) and fnmatch.fnmatchcase(topic, glob)
    assert watcher.matches(msg) == expected
