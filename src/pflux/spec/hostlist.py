"""Hostlists (RFC 29): ordered lists of hostnames written compactly, ``node[0-3,7]``.

R (RFC 20) names the host of each execution target in a hostlist, and users
read and type them.  A hostlist is comma-separated expressions
``prefix[idlist]suffix``; the idlist holds ids and ``a-b`` ranges in any order,
repeats allowed, and each element keeps the zero padding of its first id
(``[08-10]`` is 08, 09, 10), as flux-core's libhostlist does.

:func:`encode` follows flux-core's ``hostlist_encode``: it keeps the hosts'
order (no sorting), merges neighbouring hosts that share a prefix and differ
only in a trailing number, and leaves hosts whose number is not trailing
(``foo1-eth0``) as they are. Expansion and encoding are ``_pfluxcore.hostlist``'s,
which the flux package's ``Hostlist`` shares; this module checks text and hosts
strictly and words the errors.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from _pfluxcore import hostlist as _hostlist

from pflux.errors import HostlistError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import NoReturn

__all__ = ["MAX_HOSTS", "decode", "encode"]

MAX_HOSTS = 1 << 20
"""The most hosts one hostlist may expand to (flux-core caps a range at 1M hosts)."""

_MAX_DIGITS = 20  # flux-core keeps host numbers in an unsigned long

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


def _expand(expr: str, text: str, hosts: list[str]) -> None:
    """Append the hosts of one bracketed expression to ``hosts``."""
    open_ = expr.index("[")
    close = expr.index("]", open_)
    try:
        _hostlist.expand(
            expr[:open_], expr[open_ + 1 : close], expr[close + 1 :], hosts, MAX_HOSTS, _MAX_DIGITS
        )
    except ValueError as exc:
        _fail(text, str(exc))


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


def encode(hosts: Iterable[str]) -> str:
    """Compress hostnames into a hostlist that :func:`decode` expands back to them."""
    if isinstance(hosts, (list, tuple)) and len(hosts) == 1:  # R of one node, the usual job's
        host = hosts[0]
        if isinstance(host, str) and _HOSTNAME.fullmatch(host):
            return host  # one host is written as it is
    if not isinstance(hosts, (list, tuple)):
        hosts = list(hosts)
    for pos, host in enumerate(hosts):
        if not isinstance(host, str) or not _HOSTNAME.fullmatch(host):
            why = "an empty string" if host == "" else "not a valid hostname"
            raise HostlistError(f"host {pos} ({host!r}): {why}")
    return _hostlist.encode(hosts, _MAX_DIGITS)
