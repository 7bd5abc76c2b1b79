"""flux-core's ``flux.hostlist``: ordered lists of hostnames in RFC 29 form.

A hostlist is comma-separated expressions ``prefix[idlist]suffix`` (``node[0-3,7]``);
each element of an idlist keeps the zero padding of its first id (``[08-10]``).
Encoding keeps the hosts' order and brackets neighbouring hosts that differ only in a
trailing number, as libhostlist's ``hostlist_encode`` does.
"""

from __future__ import annotations

import numbers
import re

from _pfluxcore import hostlist as _hostlist

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterator

__all__ = ["Hostlist", "decode"]

_MAX_HOSTS = 1 << 20  # hosts one expression may expand to, as libhostlist caps a range
_EXPR = re.compile(r"([^\[\],]*)(?:\[([^\[\]]*)\]([^\[\],]*))?")
_TRAILING = re.compile(r"^(.*?)(\d*)$", re.DOTALL)


def _invalid(text: str) -> ValueError:
    return ValueError(f"Invalid hostlist: '{text}'")


def _expand(text: str) -> list[str]:
    """The hosts of one RFC 29 string, in order; ValueError if it is malformed."""
    hosts: list[str] = []
    pos = 0
    while pos <= len(text):
        match = _EXPR.match(text, pos)
        end = match.end() if match else pos
        if match is None or (end < len(text) and text[end] != ","):
            raise _invalid(text)
        prefix, idlist, suffix = match.groups()
        if idlist is None:
            if prefix:
                hosts.append(prefix)
        else:
            hosts.extend(_range_hosts(prefix, idlist, suffix, text))
        pos = end + 1
    return hosts


def _range_hosts(prefix: str, idlist: str, suffix: str, text: str) -> list[str]:
    hosts: list[str] = []
    try:
        _hostlist.expand(prefix, idlist, suffix, hosts, _MAX_HOSTS)
    except ValueError:
        raise _invalid(text) from None
    return hosts


def _sort_key(host: str) -> tuple[str, int, int]:
    match = _TRAILING.match(host)
    assert match is not None
    head, digits = match.groups()
    return (head, int(digits) if digits else -1, len(digits))


class Hostlist:
    """A list of hosts, from an RFC 29 string (``"host[0-10]"``) or an iterable of them."""

    def __init__(self, arg: Any = "", handle: Any = None) -> None:
        self._hosts: list[str]
        if handle is not None:
            self._hosts = list(handle)
        elif isinstance(arg, str):
            self._hosts = _expand(arg)
        elif isinstance(arg, Hostlist):
            self._hosts = list(arg._hosts)
        elif hasattr(arg, "__iter__"):
            self._hosts = []
            for hosts in arg:
                if not isinstance(hosts, str):
                    raise TypeError(f"Hostlist(): expected string or Iterable, got {type(hosts)}")
                self._hosts.extend(_expand(hosts))
        else:
            raise TypeError(f"Hostlist(): expected string or Iterable, got {type(arg)}")

    def __str__(self) -> str:
        return self.encode()

    def __repr__(self) -> str:
        return f"Hostlist('{self}')"

    def __len__(self) -> int:
        return len(self._hosts)

    def __getitem__(self, index: Any) -> Any:
        """The host at ``index`` (negative counts from the end); a ``Hostlist`` of the
        hosts of a slice or of an iterable of indices (an ``IDset`` of ranks)."""
        if isinstance(index, numbers.Integral):
            i = int(index)
            if i < 0:
                i += len(self._hosts)
            if 0 <= i < len(self._hosts):
                return self._hosts[i]
            raise IndexError("Hostlist index out of range")
        if isinstance(index, slice):
            return Hostlist(handle=self._hosts[index])
        if hasattr(index, "__iter__"):
            hosts = []
            for n in index:
                if not isinstance(n, numbers.Integral):
                    raise TypeError(f"Invalid Hostlist index '{n}'")
                hosts.append(self[n])
            return Hostlist(handle=hosts)
        raise TypeError("Hostlist index must be integer or slice")

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._hosts))

    def __contains__(self, name: object) -> bool:
        return name in self._hosts

    def encode(self) -> str:
        """The RFC 29 string of the hosts, in order."""
        return _hostlist.encode(self._hosts)

    def count(self) -> int:
        """How many hosts the list holds (repeats counted)."""
        return len(self._hosts)

    def append(self, *args: Any) -> int:
        """Append each argument (a Hostlist, or what ``Hostlist()`` takes); the number of
        hosts added."""
        added: list[str] = []
        for arg in args:
            added.extend(arg._hosts if isinstance(arg, Hostlist) else Hostlist(arg)._hosts)
        self._hosts.extend(added)
        return len(added)

    def delete(self, hosts: Any) -> int:
        """Remove every occurrence of the hosts of ``hosts`` (a Hostlist or RFC 29 string);
        the number of hosts removed."""
        gone = set(Hostlist(str(hosts))._hosts)
        kept = [host for host in self._hosts if host not in gone]
        removed = len(self._hosts) - len(kept)
        self._hosts = kept
        return removed

    def sort(self) -> Hostlist:
        """Sort by name, then by trailing number; returns the list itself."""
        self._hosts.sort(key=_sort_key)
        return self

    def uniq(self) -> Hostlist:
        """Sort and drop repeated hosts; returns the list itself."""
        self._hosts = sorted(set(self._hosts), key=_sort_key)
        return self

    def expand(self) -> list[str]:
        """The hosts as a Python list."""
        return list(self._hosts)

    def copy(self) -> Hostlist:
        """An independent copy."""
        return Hostlist(handle=self._hosts)

    def find(self, host: str) -> int:
        """The position of the first ``host``; FileNotFoundError if it is not here."""
        try:
            return self._hosts.index(host)
        except ValueError:
            raise FileNotFoundError(2, f"host '{host}' not found") from None

    def index(self, hosts: Any, ignore_nomatch: bool = False) -> list[int]:
        """The positions of ``hosts`` (a Hostlist or hostlist string), in their order;
        FileNotFoundError naming those not here unless ``ignore_nomatch``."""
        if not isinstance(hosts, Hostlist):
            hosts = Hostlist(hosts)
        first: dict[str, int] = {}
        for position, host in enumerate(self._hosts):
            first.setdefault(host, position)
        found = [first[host] for host in hosts if host in first]
        missing = [host for host in hosts if host not in first]
        if missing and not ignore_nomatch:
            suffix = "s" if len(missing) > 1 else ""
            raise FileNotFoundError(f"host{suffix} '{Hostlist(missing)}' not found")
        return found


def decode(arg: Any) -> Hostlist:
    """The Hostlist of an RFC 29 string or an iterable of them."""
    return Hostlist(arg)
