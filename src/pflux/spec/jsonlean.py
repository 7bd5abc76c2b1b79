"""The standard library's JSON, from its C accelerator ``_json`` alone.

The ``json`` package imports ``re`` (with enum, functools and the regular
expression compiler), a fifth of a short command's instructions, for the
patterns of its pure-Python fallbacks. ``_json``'s scanner and encoder are what
``json.loads`` and ``json.dumps`` run on CPython; called here as they call them,
they give the same values, the same bytes and the same errors
(tests/unit/spec/test_jsonlean.py). Only a failure loads ``json.decoder``, for
its ``JSONDecodeError``, which the scanner raises its own errors as.
"""

from __future__ import annotations

import _json

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["dumps_text", "loads", "value_or"]

_WHITESPACE = " \t\n\r"
_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


class _Context:
    """What ``_json.make_scanner`` reads from a decoder: json.loads's defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON data")


class _DataContext(_Context):
    """As ``_Context``, refusing NaN, Infinity and -Infinity."""

    parse_constant = staticmethod(_refuse_constant)


_scan = _json.make_scanner(_Context())  # type: ignore[arg-type]  # what it reads of one
_scan_data = _json.make_scanner(_DataContext())  # type: ignore[arg-type]
_encode_string = _json.encode_basestring


def loads(data: bytes | bytearray | str) -> Any:
    """The value of the one JSON text ``data``, as ``json.loads`` reads it."""
    if isinstance(data, str):
        if data.startswith("\ufeff"):
            _fail("Unexpected UTF-8 BOM (decode using utf-8-sig)", data, 0)
        text = data
    elif isinstance(data, (bytes, bytearray)):
        text = data.decode(_encoding(data), "surrogatepass")
    else:
        raise TypeError(
            f"the JSON object must be str, bytes or bytearray, not {data.__class__.__name__}"
        )
    start = len(text) - len(text.lstrip(_WHITESPACE))
    try:
        value, end = _scan(text, start)
    except StopIteration as stop:
        _fail("Expecting value", text, stop.value)
    except SystemError:
        value, end = _scan_again(text, start)
    size = len(text)
    while end < size and text[end] in _WHITESPACE:
        end += 1
    if end != size:
        _fail("Extra data", text, end)
    return value


def value_or(text: str, default: Any) -> Any:
    """The value of ``text`` if it is one JSON text other than NaN, Infinity and
    -Infinity, else ``default`` (an option's ``KEY=VALUE``, where a word is text);
    as ``json.loads`` with a ``parse_constant`` that refuses, without loading json
    where ``text`` is not JSON at all."""
    try:
        value, end = _scan_data(text, len(text) - len(text.lstrip(_WHITESPACE)))
    except (StopIteration, ValueError, SystemError):  # SystemError: see _scan_again
        return default
    return value if not text[end:].strip(_WHITESPACE) else default


def _encoding(data: bytes | bytearray) -> str:
    """The encoding of JSON bytes, by their byte order mark or their first zero bytes
    (RFC 4627's rule, which json.loads follows)."""
    if data[:4] in (b"\x00\x00\xfe\xff", b"\xff\xfe\x00\x00"):
        return "utf-32"
    if data[:2] in (b"\xfe\xff", b"\xff\xfe"):
        return "utf-16"
    if data[:3] == b"\xef\xbb\xbf":
        return "utf-8-sig"
    if len(data) >= 4:
        if not data[0]:
            return "utf-16-be" if data[1] else "utf-32-be"
        if not data[1]:
            return "utf-16-le" if data[2] or data[3] else "utf-32-le"
    elif len(data) == 2:
        if not data[0]:
            return "utf-16-be"
        if not data[1]:
            return "utf-16-le"
    return "utf-8"


def _scan_again(text: str, start: int) -> Any:
    """Scan ``text`` again with ``json.decoder`` loaded: the scanner raises its errors as
    that module's JSONDecodeError, and where Python (3.11) only looks the module up,
    not loaded it fails with a SystemError instead."""
    import json.decoder  # noqa: F401 - loaded for the scanner

    return _scan(text, start)


def _fail(message: str, text: str, position: int) -> Any:
    from json.decoder import JSONDecodeError

    raise JSONDecodeError(message, text, position)


def _unknown(value: Any) -> Any:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def dumps_text(
    value: Any, *, default: Callable[[Any], Any] | None = None, sort_keys: bool = False
) -> str:
    """``value`` as compact JSON text, non-ASCII kept, NaN and infinities refused, as
    ``json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)``."""
    if isinstance(value, str):
        text: str = _encode_string(value)
        return text
    encode = _json.make_encoder(
        {}, default or _unknown, _encode_string, None, ":", ",", sort_keys, False, False
    )
    return "".join(encode(value, 0))
