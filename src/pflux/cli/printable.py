"""Text that a user chose, made safe to show on a terminal.

A job name, an exception note, a memo or a log message reaches other users'
listings; printed raw, a newline forges a row and an escape sequence clears the
screen, retitles the window or moves the cursor. Every human-readable listing
passes such text through ``printable``: each character that is not printable
(``str.isprintable``: C0 and C1 controls, DEL, format characters such as bidi
overrides, separators other than the space, unassigned and private code points)
is shown as its escape (``\\n``, ``\\t``, ``\\r``, else ``\\xHH``, ``\\uHHHH`` or
``\\UHHHHHHHH``), and printable text is left as it is. JSON output keeps the exact
string: ``printable_json`` writes what JSON leaves raw (C1 controls, DEL, format
characters) as JSON's own ``\\uHHHH``, the same value to any JSON reader.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any, Final

__all__ = ["printable", "printable_json", "printable_value"]

_NAMED: Final = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def printable(text: str) -> str:
    """``text`` with each non-printable character escaped."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else _escaped(char) for char in text)


def printable_value(value: Any) -> Any:
    """``printable`` for a string; any other value as it is (its ``str``, ``repr``
    based for containers, escapes its strings already)."""
    return printable(value) if isinstance(value, str) else value


def printable_json(text: str) -> str:
    """JSON text (lines of it) with each non-printable character but the newline as
    its JSON escape: the same JSON values, nothing raw for the terminal."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c == "\n" else _json_escaped(c) for c in text)


def _json_escaped(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # a UTF-16 surrogate pair, as JSON writes a character past the BMP
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _escaped(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"
