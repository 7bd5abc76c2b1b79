"""RFC 29 hostlists: a bracketed expression's hosts, and hosts written compactly.

Both faces expand ``prefix[idlist]suffix`` and encode as flux-core's libhostlist
does; each splits text into expressions and checks it by its own rules (pflux
strictly, with a message per rule; the flux package as flux-core's binding) and
words the ``ValueError`` raised here as its own error.
"""

from __future__ import annotations

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (several ms)
if TYPE_CHECKING:
    from typing import Iterable

_DIGITS = "0123456789"


def quote(piece: str) -> str:
    """``piece`` in double quotes, as JSON writes printable ASCII, shortened if long."""
    if len(piece) > 64:
        piece = piece[:61] + "..."
    return '"' + piece.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _number(s: str, element: str, max_digits: int | None) -> int:
    if s.isdigit() and s.isascii():
        if max_digits is not None and len(s) > max_digits:
            raise ValueError(f"number {quote(s)} is too long")
        return int(s)
    if not element:
        raise ValueError("empty element in brackets")
    raise ValueError(f"malformed range {quote(element)}")


def expand(
    prefix: str,
    idlist: str,
    suffix: str,
    hosts: list[str],
    max_hosts: int,
    max_digits: int | None = None,
) -> None:
    """Append the hosts of ``prefix[idlist]suffix`` to ``hosts``.

    Each element of ``idlist`` is an id or an ascending ``lo-hi`` range, and
    keeps the zero padding of its first id (``[08-10]`` is 08, 09, 10).
    ValueError if ``hosts`` would then hold ``max_hosts`` or more.
    """
    if not idlist:
        raise ValueError("empty brackets")
    for element in idlist.split(","):
        lo_s, dash, hi_s = element.partition("-")
        lo = _number(lo_s, element, max_digits)
        hi = _number(hi_s, element, max_digits) if dash else lo
        if hi < lo:
            raise ValueError(f"range {quote(element)} descends")
        if len(hosts) + hi - lo >= max_hosts:
            raise ValueError(f"expands to more than {max_hosts} hosts")
        width = len(lo_s)
        hosts.extend([f"{prefix}{n:0{width}d}{suffix}" for n in range(lo, hi + 1)])


class _Group:
    """Neighbouring hosts ``prefix<n>`` whose numbers form ``[lo, hi, width]`` runs."""

    __slots__ = ("prefix", "runs")

    def __init__(self, prefix: str, value: int, width: int) -> None:
        self.prefix = prefix
        self.runs = [[value, value, width]]

    def add(self, value: int, digits: str) -> None:
        last = self.runs[-1]
        width = last[2]
        # value joins the run if zero-padding it to the run's width gives digits back
        if value == last[1] + 1 and (
            len(digits) == width or (len(digits) > width and digits[0] != "0")
        ):
            last[1] = value
        else:
            self.runs.append([value, value, len(digits)])

    def text(self) -> str:
        runs = self.runs
        if len(runs) == 1 and runs[0][0] == runs[0][1]:
            lo, _, width = runs[0]
            return f"{self.prefix}{lo:0{width}d}"
        ids = ",".join(
            f"{lo:0{w}d}" if lo == hi else f"{lo:0{w}d}-{hi:0{w}d}" for lo, hi, w in runs
        )
        return f"{self.prefix}[{ids}]"


def encode(hosts: Iterable[str], max_digits: int | None = None) -> str:
    """``hosts`` as a hostlist, in their order (libhostlist's ``hostlist_encode``).

    Neighbouring hosts that share a prefix and differ only in a trailing
    number are bracketed; a host without one (or with one longer than
    ``max_digits``) is written as it is.
    """
    parts: list[str] = []
    group: _Group | None = None
    for host in hosts:
        prefix = host.rstrip(_DIGITS)
        digits = host[len(prefix) :]
        if not digits or (max_digits is not None and len(digits) > max_digits):
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
