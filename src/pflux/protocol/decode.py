"""The one error mapping: a payload that does not fit its type, naming the field.

A payload of the wrong shape (not an object, a field missing or of the
wrong JSON type) is EPROTO; a value of the right type that breaks the rule
its type states (a range, a length, a pattern, one of a set) is EINVAL, as
flux-core answers a request it cannot unpack and one whose value it refuses.
"""

from __future__ import annotations

import errno
import re
from typing import Any, TypeVar

import msgspec

from pflux.errors import RPCError

# msgspec's "Expected `int` >= 0 - at `$.id`" / "Object missing required field `id`"; a
# struct's own check within another adds the outer path: "... - at `$.event` - at `$.jobs[0]`"
_AT = re.compile(r" - at `\$(?P<path>[^`]*)`$")
_MISSING = re.compile(r"^Object missing required field `(?P<field>[^`]*)`")
# the shape: "Expected `str | null`, got `int`", a struct's own "Expected `object`" (invalid)
_SHAPE = re.compile(
    r"^(Object missing required field |Expected `[^`]*`, got |Expected `?\w+`?( - at |$))"
)

T = TypeVar("T")


def decode(topic: str, payload: Any, kind: type[T]) -> T:
    """``payload`` as a ``kind``, or an RPCError naming the field and the rule.

    A service in the broker's process sends another the message it built as
    its type (``encode`` makes JSON of it only if it leaves the process): that
    is taken as it is, already checked by its type's ``__post_init__``.
    """
    if payload.__class__ is kind:
        return payload  # typed by its sender in this process
    try:
        return msgspec.convert(payload, kind, strict=True)
    except msgspec.ValidationError as exc:
        text = str(exc)
        errnum = errno.EPROTO if _SHAPE.match(text) else errno.EINVAL
        raise RPCError(errnum, error_text(topic, text)) from None


def error_text(topic: str, text: str) -> str:
    """``topic: field: rule`` from msgspec's message (``topic: rule`` for the whole payload)."""
    rule, path = text, ""
    while match := _AT.search(rule):  # outermost first
        rule, path = rule[: match.start()], path + match["path"]
    path = path.lstrip(".")
    missing = _MISSING.match(rule)
    if missing:  # within a nested object, the field's whole path
        return f"{topic}: {path + '.' if path else ''}{missing['field']}: required"
    rule = rule.replace("`", "")
    rule = rule[:1].lower() + rule[1:]
    if not path:
        return f"{topic}: payload: {rule}"
    return f"{topic}: {path}: {rule}"


def invalid(field: str, rule: str) -> ValueError:
    """For a struct's ``__post_init__``: a check msgspec cannot state, as msgspec words one."""
    return ValueError(f"{rule[:1].upper()}{rule[1:]} - at `$.{field}`")
