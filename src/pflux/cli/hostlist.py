"""``pflux hostlist [SOURCES]``: hostlists combined and shown, as ``flux hostlist``.

A source is a hostlist, a job id (its nodes), ``instance`` (every host of the
instance), ``local`` (the nodes of the job in ``FLUX_JOB_ID``, else
``instance``), ``avail``/``available`` (the instance's hosts that are not
drained) or ``stdin``/``-`` (hosts read on stdin).  The lists are appended
(or intersected, subtracted, xor-ed), then excluded, sorted, made unique, cut
and printed compressed, expanded or counted.  The instance is asked only
when a source needs it.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

from pflux.cli import base
from pflux.errors import HostlistError, IdsetError, JobIDError, PfluxError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

SOURCES = """\
SOURCES may be:
  instance     the hosts of the instance
  JOBID        the hosts of a job
  local        the hosts of the job in FLUX_JOB_ID, else 'instance'
  avail[able]  the hosts of the instance less those drained
  stdin, -     hosts read on stdin (waiting at most $PFLUX_HOSTLIST_STDIN_TIMEOUT
               seconds, default 15, for the first)
  HOSTS        a hostlist
Without SOURCES: stdin ('local' with -l, --local).
"""
_NUMBERED = re.compile(r"(.*?)(\d+)$")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pflux hostlist",
        description="Combine and print hostlists.",
        epilog=SOURCES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("-e", "--expand", action="store_true", help="print each host")
    shown.add_argument("-c", "--count", action="store_true", help="print the number of hosts")
    p.add_argument(
        "-d", "--delimiter", metavar="S", default=" ", help="between expanded hosts (default ' ')"
    )
    p.add_argument(
        "-n", "--nth", metavar="[-]IDS", help="the hosts at indices IDS (-IDS: from the end)"
    )
    p.add_argument(
        "-F", "--find", metavar="HOSTS", help="print the indices of HOSTS (each must be there)"
    )
    p.add_argument("-L", "--limit", metavar="N", type=int, help="at most N hosts (-N: the last N)")
    p.add_argument("-S", "--sort", action="store_true", help="sort the result")
    p.add_argument(
        "-x", "--exclude", metavar="IDS|HOSTS", help="drop these hosts (or these indices)"
    )
    p.add_argument("-u", "--union", "--unique", action="store_true", help="each host once, sorted")
    combine = p.add_mutually_exclusive_group()
    combine.add_argument("-i", "--intersect", action="store_true", help="hosts in every list")
    combine.add_argument(
        "-m", "--minus", action="store_true", help="the first list less the others"
    )
    combine.add_argument("-X", "--xor", action="store_true", help="hosts in one list but not both")
    p.add_argument("-f", "--fallback", action="store_true", help="a job id not found is a hostname")
    p.add_argument("-l", "--local", action="store_true", help="the default source is 'local'")
    p.add_argument(
        "-q", "--quiet", action="store_true", help="no output; exit 1 if the result is empty"
    )
    p.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    p.add_argument("sources", metavar="SOURCES", nargs="*", help="where hosts come from")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return base.run("hostlist", lambda: _hostlist(args))


def _hostlist(args: argparse.Namespace) -> int:
    from pflux.spec import hostlist

    sources = args.sources or ["local" if args.local else "stdin"]
    with _Instance(args.uri) as instance:
        lists = [_resolve(source, instance, args.fallback) for source in sources]
    hosts = _combine(args, lists)
    if args.exclude:
        hosts = _exclude(hosts, args.exclude)
    if args.sort:
        hosts.sort(key=_sort_key)
    if args.union:
        hosts = sorted(set(hosts), key=_sort_key)
    if args.limit:
        hosts = hosts[: args.limit] if args.limit > 0 else hosts[args.limit :]
    if args.nth is not None:
        hosts = _nth(hosts, args.nth)
    if args.quiet:
        return 0 if hosts else 1
    if args.find:
        print(" ".join(str(i) for i in _find(hosts, args.find)))
    elif args.count:
        print(len(hosts))
    elif hosts:
        text = (
            args.delimiter.replace("\\n", "\n").join(hosts)
            if args.expand
            else hostlist.encode(hosts)
        )
        print(text)
    return 0


class _Instance:
    """A client opened on first use, so that sources of hosts alone need no instance."""

    def __init__(self, uri: str | None) -> None:
        self.uri = uri
        self.client: Any = None

    def get(self) -> Any:
        if self.client is None:
            from pflux import Client

            self.client = Client(self.uri)
        return self.client

    def __enter__(self) -> _Instance:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.client is not None:
            self.client.close()


def _resolve(source: str, instance: _Instance, fallback: bool) -> list[str]:
    from pflux.spec import hostlist
    from pflux.spec.fluid import JobID

    if source in ("stdin", "-"):
        return _stdin()
    if source == "instance":
        return _instance_hosts(instance)
    if source == "local":
        jobid = os.environ.get("FLUX_JOB_ID")
        return _job_hosts(instance, jobid, False) if jobid else _instance_hosts(instance)
    if source in ("avail", "available"):
        status = instance.get().resource_status()
        drained = {int(rank) for rank in status.get("drain") or {}}
        return _hosts_of(status["all"], skip=drained)
    try:
        JobID.parse(source)
    except JobIDError:
        return _decode(source)
    hosts = _job_hosts(instance, source, fallback)
    return hosts if hosts is not None else hostlist.decode(source)


def _stdin() -> list[str]:
    """The hosts on stdin, which must have something within the timeout (flux's 15 s)."""
    import select

    name = "PFLUX_HOSTLIST_STDIN_TIMEOUT"
    text = os.environ.get(name) or os.environ.get("FLUX_HOSTLIST_STDIN_TIMEOUT") or "15"
    try:
        timeout = float(text)
    except ValueError:
        raise PfluxError(f"{name}: {text!r} is not a number of seconds") from None
    if not select.select([sys.stdin], [], [], timeout)[0]:
        raise PfluxError(f"timeout after {timeout}s waiting for stdin")
    hosts: list[str] = []
    for word in sys.stdin.read().split():
        hosts.extend(_decode(word))
    return hosts


def _decode(text: str) -> list[str]:
    from pflux.spec import hostlist

    try:
        return hostlist.decode(text)
    except HostlistError:
        raise PfluxError(f"Invalid jobid or hostlist {text}") from None


def _instance_hosts(instance: _Instance) -> list[str]:
    return _hosts_of(instance.get().resource_status()["all"], skip=set())


def _hosts_of(doc: Any, skip: set[int]) -> list[str]:
    from pflux.spec.resource import ResourceSet

    resources = ResourceSet.from_json(doc, allow_empty=True)
    return [t.hostname for rank, t in sorted(resources.targets.items()) if rank not in skip]


def _job_hosts(instance: _Instance, text: str, fallback: bool) -> Any:
    """The job's nodes; None if it is not found and ``fallback`` makes it a hostname."""
    from pflux.errors import RPCError
    from pflux.spec import hostlist
    from pflux.spec.fluid import JobID

    try:
        listing = instance.get().job_info(JobID.parse(text), ["nodelist"])
    except RPCError as exc:
        if getattr(exc, "errnum", None) == 2:
            if fallback:
                return None
            raise PfluxError(f"job {text} not found") from None
        raise PfluxError(f"job {text}: {exc}") from None
    return hostlist.decode(listing.nodelist) if listing.nodelist else []


def _combine(args: argparse.Namespace, lists: list[list[str]]) -> list[str]:
    if not (args.intersect or args.minus or args.xor):
        return [host for hosts in lists for host in hosts]
    result = list(lists[0])
    for other in lists[1:]:
        if args.intersect:
            result = sorted({h for h in result if h in set(other)}, key=_sort_key)
        elif args.minus:
            result = _delete(result, other)
        else:
            both = _delete(result, other) + _delete(other, result)
            result = sorted(set(both), key=_sort_key)
    return result


def _delete(hosts: list[str], gone: list[str]) -> list[str]:
    """``hosts`` less every occurrence of each of ``gone``."""
    drop = set(gone)
    return [host for host in hosts if host not in drop]


def _exclude(hosts: list[str], text: str) -> list[str]:
    """Drop the hosts ``text`` names; if it names none of them, it may be indices."""
    from pflux.spec.idset import IdSet

    left = _delete(hosts, _decode(text))
    if len(left) != len(hosts):
        return left
    try:
        indices = set(IdSet.decode(text))
    except IdsetError:
        return left
    return [host for i, host in enumerate(hosts) if i not in indices]


def _nth(hosts: list[str], text: str) -> list[str]:
    from pflux.spec.idset import IdSet

    try:
        ids = sorted(IdSet.decode(text.removeprefix("-")))
    except IdsetError as exc:
        raise PfluxError(f"--nth: {exc}") from None
    if text.startswith("-"):
        picked = [hosts[-i] for i in reversed(ids) if 0 < i <= len(hosts)]
    else:
        picked = [hosts[i] for i in ids if i < len(hosts)]
    if len(picked) != len(ids):
        raise PfluxError(f"--nth: index out of range (the hostlist has {len(hosts)} hosts)")
    return picked


def _find(hosts: list[str], text: str) -> list[int]:
    indices = []
    for host in _decode(text):
        if host not in hosts:
            raise PfluxError(f"--find: {host} is not in the hostlist")
        indices.append(hosts.index(host))
    return indices


def _sort_key(host: str) -> tuple[str, int, str]:
    """flux's order: by prefix, then by number (hosts without one first)."""
    match = _NUMBERED.fullmatch(host)
    if match is None:
        return (host, -1, host)
    return (match[1], int(match[2]), host)
