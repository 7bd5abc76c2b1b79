"""Hostlists (RFC 29): ordered lists of hostnames written compactly, ``node[0-3,7]``.

R (RFC 20) names the host of each execution target in a hostlist, and users
read and type them.  A hostlist is comma-separated expressions
``prefix[idlist]suffix``; the idlist holds ids and ``a-b`` ranges in any order,
repeats allowed, and each element keeps the zero padding of its first id
(``[08-10]`` is 08, 09, 10), as flux-core's libhostlist does.

:func:`encode` follows flux-core's ``hostlist_encode``: it keeps the hosts'
order (no sorting), merges neighbouring hosts that share a prefix and differ
only in a trailing number, and leaves hosts whose number is not trailing
(``foo1-eth0``) as they are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import NoReturn

from pflux.errors import HostlistError

__all__ = ["MAX_HOSTS", "decode", "encode"]

MAX_HOSTS = 1 << 20
"""The most hosts one hostlist may expand to (flux-core caps a range at 1M hosts)."""

_MAX_DIGITS = 20  # flux-core keeps host numbers in an unsigned long
_DIGITS = "0123456789"

# Printable, non-space ASCII; a hostname additionally excludes "," "[" "]".
_TEXT = re.compile(r"[!-~]*")
_HOSTNAME = re.compile(r"[!-+\--Z\\^-~]+")
_EXPR = r"[^\[\],]*(?:\[[^\[\]]*\][^\[\],]*)?"
_HOSTLIST = re.compile(rf"{_EXPR}(?:,{_EXPR})*")
_EXPRS = re.compile(_EXPR)


def _show(text: str) -> str:
    return json.dumps(text if len(text) <= 64 else text[:61] + "...", ensure_ascii=False)


def _fail(text: str, rule: str) -> NoReturn:
    raise HostlistError(f"hostlist {_show(text)}: {rule}")


def _structure_error(text: str) -> str:
    """Say which bracket rule ``text`` breaks (it failed the grammar)."""
    depth = groups = 0
    for c in text:
        if c == "[":
            if depth:
                return "nested brackets"
            if groups:
                return "more than one bracketed idlist in one expression"
            depth = 1
        elif c == "]":
            if not depth:
                return "unbalanced brackets"
            depth, groups = 0, groups + 1
        elif c == "," and not depth:
            groups = 0
    return "unbalanced brackets"


def _number(s: str, elem: str, text: str) -> int:
    if s.isdigit():  # the caller has checked that the text is ASCII
        if len(s) > _MAX_DIGITS:
            _fail(text, f"number {_show(s)} is too long")
        return int(s)
    if not elem:
        _fail(text, "empty element in brackets")
    _fail(text, f"malformed range {_show(elem)}")


def _expand(expr: str, text: str, hosts: list[str]) -> None:
    """Append the hosts of one bracketed expression to ``hosts``."""
    open_ = expr.index("[")
    close = expr.index("]", open_)
    prefix, idlist, suffix = expr[:open_], expr[open_ + 1 : close], expr[close + 1 :]
    if not idlist:
        _fail(text, "empty brackets")
    for elem in idlist.split(","):
        lo_s, dash, hi_s = elem.partition("-")
        lo = _number(lo_s, elem, text)
        hi = _number(hi_s, elem, text) if dash else lo
        if hi < lo:
            _fail(text, f"range {_show(elem)} descends")
        if len(hosts) + hi - lo >= MAX_HOSTS:
            _fail(text, f"expands to more than {MAX_HOSTS} hosts")
        width = len(lo_s)
        hosts.extend([f"{prefix}{n:0{width}d}{suffix}" for n in range(lo, hi + 1)])


def decode(text: str) -> list[str]:
    """Expand a hostlist into its hostnames, in order; HostlistError if malformed."""
    if not isinstance(text, str):
        raise HostlistError(f"hostlist must be a string, not {type(text).__name__}")
    if not _TEXT.fullmatch(text):
        bad = next(c for c in text if not ("!" <= c <= "~"))
        _fail(text, f"invalid character {bad!r}")
    if "[" not in text and "]" not in text:
        return [host for host in text.split(",") if host]
    if not _HOSTLIST.fullmatch(text):
        _fail(text, _structure_error(text))
    hosts: list[str] = []
    for expr in _EXPRS.findall(text):
        if "[" in expr:
            _expand(expr, text, hosts)
        elif expr:
            hosts.append(expr)
    if len(hosts) > MAX_HOSTS:
        _fail(text, f"expands to more than {MAX_HOSTS} hosts")
    return hosts


class _Group:
    """Neighbouring hosts ``prefix<n>`` whose numbers form ``(lo, hi, width)`` ranges."""

    __slots__ = ("prefix", "ranges")

    def __init__(self, prefix: str, value: int, width: int) -> None:
        self.prefix = prefix
        self.ranges = [[value, value, width]]

    def add(self, value: int, digits: str) -> None:
        last = self.ranges[-1]
        width = last[2]
        # value joins the range if zero-padding it to the range's width gives digits back
        if value == last[1] + 1 and (
            len(digits) == width or (len(digits) > width and digits[0] != "0")
        ):
            last[1] = value
        else:
            self.ranges.append([value, value, len(digits)])

    def text(self) -> str:
        ranges = self.ranges
        if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
            lo, _, width = ranges[0]
            return f"{self.prefix}{lo:0{width}d}"
        ids = ",".join(
            f"{lo:0{w}d}" if lo == hi else f"{lo:0{w}d}-{hi:0{w}d}" for lo, hi, w in ranges
        )
        return f"{self.prefix}[{ids}]"


def encode(hosts: Iterable[str]) -> str:
    """Compress hostnames into a hostlist that :func:`decode` expands back to them."""
    if isinstance(hosts, (list, tuple)) and len(hosts) == 1:  # R of one node, the usual job's
        host = hosts[0]
        if isinstance(host, str) and _HOSTNAME.fullmatch(host):
            return host  # one host is written as it is
    parts: list[str] = []
    group: _Group | None = None
    for pos, host in enumerate(hosts):
        if not isinstance(host, str) or not _HOSTNAME.fullmatch(host):
            why = "an empty string" if host == "" else "not a valid hostname"
            raise HostlistError(f"host {pos} ({host!r}): {why}")
        prefix = host.rstrip(_DIGITS)
        digits = host[len(prefix) :]
        if not digits or len(digits) > _MAX_DIGITS:
            if group is not None:
                parts.append(group.text())
                group = None
            parts.append(host)
        elif group is not None and group.prefix == prefix:
            group.add(int(digits), digits)
        else:
            if group is not None:
                parts.append(group.text())
            group = _Group(prefix, int(digits), len(digits))
    if group is not None:
        parts.append(group.text())
    return ",".join(parts)
