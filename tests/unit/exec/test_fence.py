"""What job-exec reads of a shell's PMI barrier: a guest's shell is the guest's to
tamper with, so its payload can at worst fail to decode, never run code or crash."""

from __future__ import annotations

import marshal

from hypothesis import given
from hypothesis import strategies as st

from pflux.exec.shellrun import _fence_puts


def test_a_shells_puts_are_a_json_object_of_strings() -> None:
    assert _fence_puts(b'{"PMI_process_mapping":"(vector,(0,1,1))","k":""}') == {
        "PMI_process_mapping": "(vector,(0,1,1))",
        "k": "",
    }
    assert _fence_puts(b"{}") == {}


def test_anything_else_is_refused() -> None:
    for payload in (
        marshal.dumps({"k": "v"}),  # what a shell once sent: never decoded by marshal again
        b'["k", "v"]',
        b'{"k": 1}',
        b'{"k": null}',
        b'{"k": {"nested": "v"}}',
        b"",
        b"\xff\xfe",
        b'{"k": "v"',
    ):
        assert _fence_puts(payload) is None, payload


@given(st.binary(max_size=256))
def test_no_payload_raises(payload: bytes) -> None:
    puts = _fence_puts(payload)
    assert puts is None or all(type(v) is str for v in puts.values())
