"""The one error mapping: a payload that does not fit its type is EPROTO, naming the field."""

from __future__ import annotations

import errno
import re
from typing import Any, TypeVar

import msgspec

from pflux.broker.message import RPCError

# msgspec's "Expected `int` >= 0 - at `$.id`" / "Object missing required field `id`"
_AT = re.compile(r"^(?P<rule>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)
_MISSING = re.compile(r"^Object missing required field `(?P<field>[^`]*)`")

T = TypeVar("T")


def decode(topic: str, payload: Any, kind: type[T]) -> T:
    """``payload`` as a ``kind``, or an RPCError (EPROTO) naming the field and the rule."""
    try:
        return msgspec.convert(payload, kind, strict=True)
    except msgspec.ValidationError as exc:
        raise RPCError(errno.EPROTO, error_text(topic, str(exc))) from None


def error_text(topic: str, text: str) -> str:
    """``topic: field: rule`` from msgspec's message (``topic: rule`` for the whole payload)."""
    match = _AT.match(text)
    assert match is not None  # the pattern matches any text
    missing = _MISSING.match(text)
    if missing:  # within a nested object, the field's whole path
        path = (match["path"] or "").lstrip(".")
        return f"{topic}: {path + '.' if path else ''}{missing['field']}: required"
    rule = match["rule"].replace("`", "")
    rule = rule[:1].lower() + rule[1:]
    path = (match["path"] or "").lstrip(".")
    if not path:
        return f"{topic}: payload: {rule}"
    return f"{topic}: {path}: {rule}"


def invalid(field: str, rule: str) -> ValueError:
    """For a struct's ``__post_init__``: a check msgspec cannot state, as msgspec words one."""
    return ValueError(f"{rule[:1].upper()}{rule[1:]} - at `$.{field}`")
