"""A jobspec's files as job-exec decodes them for the shell (RFC 37's file objects)."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.errors import PfluxError
from pflux.spec.files import decode_files


@given(st.binary(), st.integers(0, 0o7777))
def test_base64_content_and_permissions_come_back(content: bytes, perms: int) -> None:
    data = base64.b64encode(content).decode()
    entry = {"mode": 0o100000 | perms, "encoding": "base64", "data": data}
    assert decode_files({"f": entry}) == [("f", content, 0o100000 | perms)]


def test_kinds_and_defaults() -> None:
    files = {
        "a": {"encoding": "utf-8", "data": "é"},
        "b": {"data": {"k": [1]}},
        "d": {"mode": 0o40700},
        "l": {"mode": 0o120777, "data": "a"},
        "p": {"mode": 0o644, "data": 1},
    }
    assert decode_files(files) == [
        ("a", "é".encode(), 0o100600),
        ("b", b'{"k": [1]}', 0o100600),
        ("d", b"", 0o40700),
        ("l", b"a", 0o120777),
        ("p", b"1", 0o100644),
    ]


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ([], "files: must be an object, got list"),
        ({"/abs": {"data": ""}}, "files: '/abs': must be a relative path"),
        ({"a/../b": {"data": ""}}, "files: 'a/../b': must be a relative path"),
        ({"x": "text"}, "files: x: must be an object"),
        ({"x": {"mode": -1, "data": ""}}, "files: x: mode must be a non-negative integer"),
        ({"x": {}}, "files: x: must have data"),
        ({"x": {"mode": 0o120777, "data": 3}}, "files: x: a link's data must be its target"),
        ({"x": {"encoding": "utf-8", "data": 3}}, "files: x: data must be a string"),
        ({"x": {"encoding": "base64", "data": "@@"}}, "files: x: data is not base64"),
    ],
)
def test_bad_files_are_named(files: object, message: str) -> None:
    with pytest.raises(PfluxError, match="^" + message.replace("(", r"\(")):
        decode_files(files)
