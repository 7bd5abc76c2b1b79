"""``pflux resource list|info|R|status|drain|undrain|eventlog``: the instance's resources,
as flux's.

``list`` asks the scheduler (``sched.resource-status``) for all, allocated and down
resources and prints one line per state: ``free`` (neither allocated nor
down), ``allocated``, ``down``, and on request ``up`` and ``all``.  Output
formats are Python format strings over the fields below, with flux's
sentinels: ``?:`` drops a field that is empty on every line, ``+:`` widens it
to its widest value, ``?+:`` does both; a spec ending in ``+`` marks a value
cut short by its precision, one ending in ``h`` prints ``-`` for an empty value.
Lines split by ``{queue}``, ``{properties}`` and ``{propertiesx}`` where the format shows
them, and ``-q/--queue`` (``list``, ``info``, ``R``, ``status``, ``drain``) keeps the
resources of the named queues, as flux's (``resource_queues``).
``eventlog`` prints the resource eventlog (``resource_eventlog``).
``info`` is ``list`` in one line per state (default ``all``); ``R`` prints the
resources of the given states (default ``all``) as one line of RFC 20 R. ``reload
PATH`` has the scheduler schedule the resources of an R file instead (the instance
owner's, while no job holds or waits for any; ``-f`` keeps ranks the instance lacks,
down; ``-x``, hwloc XML, is refused), until the instance restarts.

``status`` shows ranks by state (``avail``, ``allocated``, ``draining``,
``drained``; pflux has no excluded, torpid or housekeeping ranks, so those
lines are empty), each state's offline ranks (the scheduler's ``offline``:
their broker is down or has not joined) on a line of their own marked ``*``
and ``✗``, as flux's; a rank that never joined has no host to name, so it
counts in NNODES but not in NODELIST; ``drain``/``undrain`` ask the scheduler
(``Client.drain_resources``), and ``drain`` with no targets lists the drained
ranks with their time and reason.
"""

from __future__ import annotations

import argparse
import datetime
import errno
import json
import re
import string
import sys
from collections.abc import Sequence

from pflux.cli import base, resource_eventlog, resource_queues
from pflux.cli.printable import printable
from pflux.errors import HostlistError, IdsetError, PfluxError, ResourceError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

HEADINGS = {
    "state": "STATE",
    "queue": "QUEUE",
    "properties": "PROPERTIES",
    "propertiesx": "PROPERTIES",
    "nnodes": "NNODES",
    "ncores": "NCORES",
    "ngpus": "NGPUS",
    "ranks": "RANKS",
    "nodelist": "NODELIST",
    "rlist": "LIST",
}

FORMATS = {
    "default": (
        "Default flux-resource list format string",
        "{state:>10} ?+:{queue:<5} ?:{propertiesx:<10.10+} {nnodes:>6} "
        "+:{ncores:>6} ?+:{ngpus:>5} {nodelist}",
    ),
    "rlist": (
        "Format including resource list details",
        "{state:>10} ?+:{queue:<5} ?:{propertiesx:<10.10+} {nnodes:>6} "
        "+:{ncores:>6} ?+:{ngpus:>5} {rlist}",
    ),
}

STATES = ("up", "down", "allocated", "free", "all")
INFO_FORMAT = "{nnodes} Nodes, {ncores} Cores, {ngpus} GPUs"

STATUS_HEADINGS = {
    "state": "STATE",
    "statex": "STATE",
    "nnodes": "NNODES",
    "ranks": "RANKS",
    "nodelist": "NODELIST",
    "reason": "REASON",
    "timestamp": "TIME",
    "status": "STATUS",
    "up": "UP",
    "color_up": "",
    "color_off": "",
}
STATUS_FORMATS = {
    "default": (
        "Default flux-resource status format string",
        "{state:>12} {color_up}{up:>2}{color_off} {nnodes:>6} {nodelist}",
    ),
    "long": (
        "Long flux-resource status format string",
        "{state:>12} {color_up}{up:>2}{color_off} {nnodes:>6} +:{reason:<30.30} {nodelist}",
    ),
}
DRAIN_FORMATS = {
    "default": (
        "Default flux-resource drain format string",
        "{timestamp!d:%b%d %R::<12} {state:<8.8} {reason:<30.30+} {nodelist}",
    ),
    "long": (
        "Long flux-resource drain format string",
        "{timestamp!d:%b%d %R::<12} {state:<8.8} {ranks:<8.8+} +:{reason:<30.30} {nodelist}",
    ),
}
STATUS_STATES = (
    "all",
    "online",
    "avail",
    "offline",
    "exclude",
    "drain",
    "draining",
    "drained",
    "torpid",
    "allocated",
    "housekeeping",
)
DEFAULT_STATUS = "avail,exclude,draining,drained,torpid,housekeeping"
# the states of whole ranks, in flux's order; drain states get a line per rank
_RANK_STATES = ("avail", "exclude", "allocated", "torpid", "housekeeping")
_SENTINELS = ("?+:", "?:", "+:")  # longest first
_EMPTY = ("", "0s", "0.0")  # values a ``?:`` field counts as empty (flux's list)
_SPEC = re.compile(
    r"(?P<align>(?:.?[<>=^])?)(?P<sign>[- +]?)(?P<flags>z?#?0?)(?P<width>\d*)"
    r"(?P<grouping>[_,]?)(?:\.(?P<precision>\d+))?(?P<type>[bcdeEfFgGnosxX%]?)"
    r"(?P<hyphen>h?)(?P<truncate>\+?)"
)


def main(argv: list[str]) -> int:
    """Entry point of ``pflux resource``."""
    parser = base.parser("resource", "List the instance's resources.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    lister = commands.add_parser(
        "list",
        prog=f"{base.PROG} resource list",
        help="list resources by state (free, allocated, down)",
    )
    lister.add_argument(
        "-o",
        "--format",
        default="default",
        help="output format: a Python format string or a named format ('help' lists them)",
    )
    lister.add_argument(
        "-s",
        "--states",
        metavar="STATE,...",
        default="free,allocated,down",
        help=f"output resources in these states ({', '.join(STATES)})",
    )
    lister.add_argument(
        "-i", "--include", metavar="TARGETS", help="only these ranks (idset) or hosts (hostlist)"
    )
    _queue_option(lister)
    lister.add_argument("--skip-empty", action="store_true", help="skip lines with no resources")
    lister.add_argument("-n", "--no-header", action="store_true", help="suppress the header")
    lister.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    _info_parser(commands)
    _r_parser(commands)
    _status_parser(commands)
    _drain_parsers(commands)
    _reload_parser(commands)
    resource_eventlog.add_parser(commands)
    args = parser.parse_args(argv)
    handlers = {
        "eventlog": resource_eventlog.run,
        "list": _list,
        "info": _info,
        "R": _r,
        "reload": _reload,
        "status": _status,
        "drain": _drain,
        "undrain": _undrain,
    }
    return base.run("resource", lambda: handlers[args.command](args))


def _info_parser(commands: Any) -> None:
    info = commands.add_parser(
        "info", prog="pflux resource info", help="one line: N Nodes, N Cores, N GPUs"
    )
    info.add_argument(
        "-s",
        "--states",
        metavar="STATE,...",
        default="all",
        help=f"a line for each of these states ({', '.join(STATES)})",
    )
    info.add_argument(
        "-i", "--include", metavar="TARGETS", help="only these ranks (idset) or hosts (hostlist)"
    )
    _queue_option(info)
    info.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")


def _r_parser(commands: Any) -> None:
    r = commands.add_parser(
        "R", prog=f"{base.PROG} resource R", help="print R (RFC 20) of resources by state"
    )
    r.add_argument(
        "-s",
        "--states",
        metavar="STATE,...",
        default="all",
        help=f"the resources in any of these states ({', '.join(STATES)})",
    )
    r.add_argument(
        "-i", "--include", metavar="TARGETS", help="only these ranks (idset) or hosts (hostlist)"
    )
    _queue_option(r)
    r.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")


def _reload_parser(commands: Any) -> None:
    reload = commands.add_parser(
        "reload", prog=f"{base.PROG} resource reload", help="schedule the resources of an R file"
    )
    reload.add_argument(
        "-f", "--force", action="store_true", help="keep ranks the instance lacks (down)"
    )
    reload.add_argument("-x", "--xml", action="store_true", help="(refused: no hwloc XML)")
    reload.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    reload.add_argument("path", help="R file, or hwloc XML directory with --xml")


def _status_parser(commands: Any) -> None:
    status = commands.add_parser(
        "status", prog="pflux resource status", help="show ranks by state (avail, drained, ...)"
    )
    status.add_argument(
        "-o",
        "--format",
        default="default",
        help="output format: a Python format string or a named format ('help' lists them)",
    )
    status.add_argument(
        "-s",
        "--states",
        metavar="STATE,...",
        help="output ranks in these states ('help' lists them)",
    )
    _common_status_options(status)
    status.add_argument(
        "--skip-empty", action="store_true", help="skip empty lines even with --states"
    )


def _queue_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-q",
        "--queue",
        action="append",
        default=[],
        metavar="QUEUE,...",
        help="only the resources of these queues",
    )


def _common_status_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-i", "--include", metavar="TARGETS", help="only these ranks (idset) or hosts (hostlist)"
    )
    _queue_option(parser)
    parser.add_argument("-n", "--no-header", action="store_true", help="suppress the header")
    parser.add_argument(
        "-L",
        "--color",
        nargs="?",
        const="always",
        default="auto",
        choices=("always", "never", "auto"),
        metavar="WHEN",
        help="color the UP column: always (the default with no WHEN), never or auto",
    )
    parser.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")


def _drain_parsers(commands: Any) -> None:
    drain = commands.add_parser(
        "drain",
        prog="pflux resource drain",
        help="give no new job to TARGETS (with none: list the drained ranks)",
    )
    drain.add_argument(
        "-f",
        "--force",
        action="count",
        default=0,
        help="replace the reason of ranks already drained; twice: their time too",
    )
    drain.add_argument(
        "-u",
        "--update",
        action="store_true",
        help="drain those not drained yet, leave the others as they are",
    )
    drain.add_argument(
        "-o",
        "--format",
        default="default",
        help="output format when listing (a format string or a name; 'help' lists them)",
    )
    _common_status_options(drain)
    drain.add_argument("targets", nargs="?", help="ranks (idset) or hosts (hostlist)")
    drain.add_argument("reason", nargs=argparse.REMAINDER, help="why")
    undrain = commands.add_parser(
        "undrain", prog="pflux resource undrain", help="schedule drained TARGETS again"
    )
    undrain.add_argument(
        "-u", "--update", action="store_true", help="no error for targets that are not drained"
    )
    undrain.add_argument("targets", help="ranks (idset) or hosts (hostlist)")
    undrain.add_argument("reason", nargs=argparse.REMAINDER, help="why (logged)")
    undrain.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")


def _info(args: argparse.Namespace) -> int:
    formatter = ResourceFormat(INFO_FORMAT)
    states = _states(args.states)
    sets = _resources(args)
    sys.stdout.write(formatter.render(_rows(sets, states, formatter, args), no_header=True))
    return 0


def _r(args: argparse.Namespace) -> int:
    """The union of the resources in the given states, as one line of R."""
    states = _states(args.states)
    sets = _resources(args)
    rset = sets[states[0]]
    for state in states[1:]:
        rset = rset | sets[state]
    sys.stdout.write(json.dumps(rset.to_json(), separators=(",", ":")) + "\n")
    return 0


def _reload(args: argparse.Namespace) -> int:
    from pflux import Client
    from pflux.errors import RPCError

    if args.xml:
        raise PfluxError(
            "reload: --xml: not supported: pflux reads no hwloc XML; give an R file (RFC 20)"
        )
    try:
        with open(args.path, encoding="utf-8") as file:
            doc = json.load(file)
    except OSError as exc:
        raise PfluxError(f"reload: {args.path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise PfluxError(f"reload: {args.path}: not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise PfluxError(f"reload: {args.path}: R must be a JSON object")
    with Client(args.uri) as client:
        try:
            client.resource_reload(doc, force=args.force)
        except RPCError as exc:
            raise PfluxError(exc.errstr) from None
    return 0


def _drain(args: argparse.Namespace) -> int:
    from pflux import Client

    if args.targets is None:
        args.states, args.skip_empty = "drain", True
        return _show_status(args, DRAIN_FORMATS)
    if args.queue:
        raise PfluxError("--queue selects the drained ranks listed: not with TARGETS")
    if args.update and args.force:
        raise PfluxError("Only one of --force and --update may be specified")
    mode = None
    if args.update:
        mode = "update"
    elif args.force:
        mode = "overwrite" if args.force == 1 else "force-overwrite"
    with Client(args.uri) as client:
        try:
            client.drain_resources(args.targets, " ".join(args.reason), mode=mode)
        except PfluxError as exc:
            if getattr(exc, "errnum", None) == errno.EEXIST:
                raise PfluxError(f"{exc}\nUse --force to overwrite existing drain reason") from None
            raise
    return 0


def _undrain(args: argparse.Namespace) -> int:
    from pflux import Client

    with Client(args.uri) as client:
        client.undrain_resources(
            args.targets, " ".join(args.reason), mode="update" if args.update else None
        )
    return 0


def _status(args: argparse.Namespace) -> int:
    if args.states == "help":
        sys.stdout.write(f"valid states: {','.join(STATUS_STATES)}\n")
        return 0
    return _show_status(args, STATUS_FORMATS)


def _show_status(args: argparse.Namespace, formats: dict[str, tuple[str, str]]) -> int:
    """flux's status lines: one per rank state, one per drained rank (merged where alike)."""
    if args.format == "help":
        sys.stdout.write(f"\nConfigured flux-resource {args.command} formats:\n\n")
        for name, (description, _) in formats.items():
            sys.stdout.write(f"  {name:<8} {description}\n")
        return 0
    fmt = formats[args.format][1] if args.format in formats else args.format
    formatter = ResourceFormat(fmt, STATUS_HEADINGS)
    states = _status_states(args.states)
    names = resource_queues.wanted(args.queue)
    sets = _fetch(args.uri, queues=bool(names))
    status = sets["status"]
    offline = _idset(status.get("offline"))
    ranks = {"all": set(sets["all"].targets) | offline}
    if names:  # a queue with no requires holds the offline ranks too
        ranks["all"] &= resource_queues.ranks_of(sets["queues"], names, sets["all"], ranks["all"])
    if args.include is not None:
        ranks["all"] &= set(_include(sets, args.include)["all"].targets) | _ranks_of(args.include)
    hosts = {rank: target.hostname for rank, target in sets["all"].targets.items()}
    drains = status.get("drain") or {}
    drained = {int(rank) for rank in drains} & ranks["all"]
    ranks["avail"] = ranks["all"] - drained
    ranks["allocated"] = set(sets["allocated"].targets) & ranks["all"]
    draining = _idset(status.get("draining")) & ranks["all"]
    ranks["draining"], ranks["drained"] = draining, drained - draining
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    online = "online" in states or "offline" not in states
    show_offline = "offline" in states or "online" not in states
    skip_empty = args.skip_empty or args.states is None
    lines: list[dict[str, Any]] = []
    for state in (*_RANK_STATES, "draining", "drained"):
        if not {state, "all"} & set(states):
            continue
        if state in _RANK_STATES:
            groups = [(ranks.get(state, set()), "", 0.0)]
        else:
            groups = [
                ({rank}, drains[str(rank)].get("reason", ""), drains[str(rank)]["timestamp"])
                for rank in sorted(ranks[state])
            ] or [(set(), "", 0.0)]
        for members, reason, since in groups:
            up, down = members - offline, members & offline
            if online and (state in _RANK_STATES or up or not down):
                lines.append(_status_row(state, True, up, hosts, reason, since, color))
            if show_offline and (state in _RANK_STATES or down):
                lines.append(_status_row(state, False, down, hosts, reason, since, color))
    lines = [
        line
        for line in _merge(formatter, lines)
        if line["nnodes"] or not (skip_empty or (line["offline"] and "offline" not in states))
    ]
    sys.stdout.write(formatter.render(lines, no_header=args.no_header))
    return 0


def _status_states(text: str | None) -> list[str]:
    states = (text or DEFAULT_STATUS).split(",")
    for state in states:
        if state not in STATUS_STATES:
            raise PfluxError(
                f"Invalid resource state {state} specified\nvalid states: {','.join(STATUS_STATES)}"
            )
    if not [state for state in states if state not in ("online", "offline")]:
        states.extend(DEFAULT_STATUS.split(","))
    if "drain" in states:
        states.extend(("draining", "drained"))
    return states


def _ranks_of(targets: str) -> set[int]:
    """The ranks an ``--include`` idset names (none for a hostlist)."""
    from pflux.spec.idset import IdSet

    try:
        return set(IdSet.decode(targets))
    except IdsetError:
        return set()


def _idset(text: Any) -> set[int]:
    from pflux.spec.idset import IdSet

    return set(IdSet.decode(text)) if isinstance(text, str) else set()


class _Up(str):
    """The UP column: a check mark, or ``y``/``n`` as ``up.ascii``."""

    ascii: str


def _status_row(  # noqa: PLR0917 (one line's every field)
    state: str,
    online: bool,
    ranks: set[int],
    hosts: dict[int, str],
    reason: str,
    since: float,
    color: bool,
) -> dict[str, Any]:
    up = _Up("✔" if online else "✗")
    up.ascii = "y" if online else "n"
    return {
        "state": state if online else f"{state}*",
        "statex": state,
        "offline": not online,
        "status": "online" if online else "offline",
        "up": up,
        "color_up": ("\033[01;32m" if online else "\033[01;31m") if color else "",
        "color_off": "\033[0;0m" if color else "",
        "ranks": ranks,
        "nodelist": [hosts[rank] for rank in sorted(ranks) if rank in hosts],
        "nnodes": len(ranks),
        "reason": printable(reason),  # a drain's reason is anyone's text: no raw controls
        "timestamp": since,
    }


def _merge(formatter: ResourceFormat, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Lines that print alike but for their ranks and hosts become one (flux's)."""
    from pflux.spec import hostlist
    from pflux.spec.idset import IdSet

    merged: dict[str, dict[str, Any]] = {}
    for line in lines:
        key = formatter.render([{**line, "ranks": "", "nodelist": "", "nnodes": 0}], no_header=True)
        key += line["state"]
        kept = merged.get(key)
        if kept is None:
            merged[key] = dict(line)
        else:
            kept["ranks"] = kept["ranks"] | line["ranks"]
            kept["nodelist"] = kept["nodelist"] + line["nodelist"]
            kept["nnodes"] = len(kept["ranks"])
    out = []
    for line in merged.values():
        names = sorted(set(line["nodelist"]), key=line["nodelist"].index)
        out.append(
            {**line, "ranks": IdSet(line["ranks"]).encode(), "nodelist": hostlist.encode(names)}
        )
    return out


def _list(args: argparse.Namespace) -> int:
    if args.format == "help":
        sys.stdout.write("\nConfigured flux-resource list formats:\n\n")
        for name, (description, _) in FORMATS.items():
            sys.stdout.write(f"  {name:<8} {description}\n")
        return 0
    fmt = FORMATS[args.format][1] if args.format in FORMATS else args.format
    formatter = ResourceFormat(fmt)  # check the format before asking the instance
    states = _states(args.states)
    sets = _resources(args, queues=bool({"queue", "propertiesx"} & set(formatter.fields)))
    rows = _rows(sets, states, formatter, args)
    if args.skip_empty:
        rows = [row for row in rows if row["nnodes"]]
    sys.stdout.write(formatter.render(rows, no_header=args.no_header))
    return 0


def _states(text: str) -> list[str]:
    states: list[str] = []
    for state in text.split(","):
        if state not in STATES:
            raise PfluxError(f"Invalid resource state {state} specified")
        if state not in states:
            states.append(state)
    return states


def _resources(args: argparse.Namespace, *, queues: bool = False) -> dict[str, Any]:
    """The sets of ``_fetch`` (with the queues if ``queues`` or ``--queue``), kept to the
    ranks of ``--queue`` and ``--include``."""
    names = resource_queues.wanted(args.queue)
    sets = _fetch(args.uri, queues=queues or bool(names))
    if names:
        everything = sets["all"]
        sets = _keep(
            sets, resource_queues.ranks_of(sets["queues"], names, everything, everything.targets)
        )
    if args.include is not None:
        sets = _include(sets, args.include)
    return sets


def _fetch(uri: str | None, *, queues: bool = False) -> dict[str, Any]:
    """all, allocated and down from the scheduler, each rank with the properties ``all``
    gives it; up and free worked out from them; ``queues``: the configured queues."""
    from pflux import Client
    from pflux.spec.queues import QueueConfig
    from pflux.spec.resource import ResourceSet

    with Client(uri) as client:
        status = client.resource_status()
        config = client.config() if queues else None
    try:
        sets: dict[str, Any] = {
            name: ResourceSet.from_json(status.get(name), allow_empty=True)
            for name in ("all", "allocated", "down")
        }
    except (ResourceError, AttributeError) as exc:
        raise PfluxError(f"sched.resource-status: unexpected reply: {exc}") from None
    for name in ("allocated", "down"):
        sets[name] = sets["all"] & sets[name]
    sets["up"] = sets["all"] - sets["down"]
    sets["free"] = sets["up"] - sets["allocated"]
    sets["status"] = status
    sets["queues"] = None if config is None else QueueConfig.from_config(config)
    return sets


def _keep(sets: dict[str, Any], ranks: set[int]) -> dict[str, Any]:
    """The sets on ``ranks`` only."""
    from pflux.spec.resource import ResourceSet

    return {
        name: resource_queues.restrict(rs, ranks) if isinstance(rs, ResourceSet) else rs
        for name, rs in sets.items()
    }


def _include(sets: dict[str, Any], targets: str) -> dict[str, Any]:
    """Keep only the ranks named by an idset, or the ranks of the hosts of a hostlist."""
    from pflux.spec import hostlist
    from pflux.spec.idset import IdSet

    try:
        ranks = set(IdSet.decode(targets))
    except IdsetError:
        try:
            hosts = set(hostlist.decode(targets))
        except HostlistError as exc:
            raise PfluxError(f"--include: {exc}") from None
        ranks = {rank for rank, t in sets["all"].targets.items() if t.hostname in hosts}
    return _keep(sets, ranks)


def _rows(
    sets: dict[str, Any], states: list[str], formatter: ResourceFormat, args: argparse.Namespace
) -> list[dict[str, Any]]:
    """A row per line of ``states``: split by the queue and property fields the format
    shows, as flux's (with one field, unless it is ``state``, by state alone)."""
    fields = formatter.fields
    splitting = []
    if len(fields) > 1 or "state" in fields:
        splitting = [field for field in fields if field in resource_queues.SPLITTING]
    names = resource_queues.wanted(args.queue)
    queues = sets["queues"]
    return [
        {**_row(line.state, line.resources), **line.fields(queues)}
        for line in resource_queues.lines(sets, states, splitting, queues, names)
    ]


def _row(state: str, resources: Any) -> dict[str, Any]:
    from pflux.spec import hostlist

    return {
        "state": state,
        "nnodes": resources.nnodes,
        "ncores": resources.ncores(),
        "ngpus": resources.ngpus(),
        "ranks": resources.ranks().encode(),
        "nodelist": hostlist.encode(resources.nodelist) if resources else "",
        "rlist": resources.summary(),
    }


class _Formatter(string.Formatter):
    """str.format with flux's spec extensions: ``h`` (hyphen if empty), ``+`` (mark a cut),
    the conversions ``!d`` (seconds as a local time: ``{t!d:STRFTIME::SPEC}``) and ``!F``
    (seconds as a duration, ``1h``), and dotted field names (``limits.min.nnodes``) that
    are keys of their own."""

    def get_field(self, field_name: str, args: Sequence[Any], kwargs: Any) -> Any:
        if field_name in kwargs:
            return kwargs[field_name], field_name
        return super().get_field(field_name, args, kwargs)

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if conversion == "d":
            return datetime.datetime.fromtimestamp(float(value or 0))
        if conversion == "F":
            return _duration(value)
        return super().convert_field(value, conversion)

    def format_field(self, value: Any, format_spec: str) -> str:
        if isinstance(value, datetime.datetime):
            when, _, format_spec = format_spec.partition("::")
            value = value.strftime(when) if when else str(value)
        mark_cut = format_spec.endswith("+")
        if mark_cut:
            format_spec = format_spec[:-1]
        if format_spec.endswith("h"):
            value = "-" if str(value) in _EMPTY else str(value)
            format_spec = format_spec[:-1] + "s"
        text: str = super().format_field(value, format_spec)
        if mark_cut and len(text) < len(str(value)):
            text = text[:-1] + "+"
        return text


class ResourceFormat:
    """A parsed output format: its literal text, fields, specs and sentinels."""

    def __init__(self, fmt: str, headings: dict[str, str] = HEADINGS) -> None:
        self.headings = headings
        try:
            parsed = list(_Formatter().parse(fmt))
        except ValueError as exc:
            raise PfluxError(f"invalid format {fmt!r}: {exc}") from None
        self.parts: list[tuple[str, str | None, str, str | None]] = []
        for text, field, spec, conv in parsed:
            if field is not None and field not in headings and field != "up.ascii":
                raise PfluxError(f"Unknown format field: {field}")
            self.parts.append((text, field, spec or "", conv))
        self.fields = [field for _, field, _, _ in self.parts if field is not None]

    def render(self, rows: Sequence[dict[str, Any]], *, no_header: bool = False) -> str:
        """The header (unless ``no_header``) and one line per row, each ending in newline."""
        parts = self._resolve(rows, no_header)
        formatter = _Formatter()
        fmt = "".join(_join(text, field, spec, conv) for text, field, spec, conv in parts)
        lines = []
        if not no_header:
            header = "".join(
                _join(text, field, _header_spec(spec), None) for text, field, spec, _ in parts
            )
            lines.append(formatter.format(header, **self._heading_values()))
        for row in rows:
            line = formatter.format(fmt, **row)
            if line and not line.isspace():
                lines.append(line)
        return "".join(line + "\n" for line in lines)

    def _heading_values(self) -> dict[str, Any]:
        values: dict[str, Any] = dict(self.headings)
        if "up" in values:
            up = _Up(values["up"])
            up.ascii = "UP"
            values["up"] = up
        return values

    def _resolve(
        self, rows: Sequence[dict[str, Any]], no_header: bool
    ) -> list[tuple[str, str | None, str, str | None]]:
        """Apply the sentinels: drop fields empty on every row, widen the others."""
        formatter = _Formatter()
        parts = []
        for text, field, spec, conv in self.parts:
            sentinel = next((s for s in _SENTINELS if text.endswith(s)), None)
            if sentinel is None or field is None:
                parts.append((text, field, spec, conv))
                continue
            values = [formatter.format(_join("", field, "", conv), **row) for row in rows]
            widest = max((len(v) for v in values if v not in _EMPTY), default=0)
            if "?" in sentinel and widest == 0:
                continue
            match = _SPEC.fullmatch(spec)
            if "+" in sentinel and match is not None:
                heading = 0 if no_header else len(self.headings.get(field, "UP"))
                width = max(int(match["width"] or 0), heading, widest)
                parts.append((text[: -len(sentinel)], field, _with_width(match, width), conv))
            else:
                parts.append((text[: -len(sentinel)], field, spec, conv))
        return parts


def _duration(value: Any) -> Any:
    """Seconds as flux's short duration (``inf`` for no limit); text is left as it is."""
    from pflux.spec import duration

    if isinstance(value, str):
        return value
    if value == float("inf"):
        return "inf"
    return duration.format(float(value), precision=4)


def _join(text: str, field: str | None, spec: str, conv: str | None) -> str:
    if field is None:
        return text.replace("{", "{{").replace("}", "}}")
    conversion = f"!{conv}" if conv else ""
    return f"{text.replace('{', '{{').replace('}', '}}')}{{{field}{conversion}:{spec}}}"


def _header_spec(spec: str) -> str:
    """Only the alignment and width of a spec apply to a heading."""
    spec = spec.rpartition("::")[2]  # a time's strftime part is not for a heading
    match = _SPEC.fullmatch(spec)
    if match is None:
        return ""
    return f"{match['align']}{match['width']}"


def _with_width(match: re.Match[str], width: int) -> str:
    """The spec of ``match`` with a new width (and, for text, a precision no narrower)."""
    precision = match["precision"]
    if precision and match["type"] in ("", "s") and int(precision) < width:
        precision = str(width)
    return (
        f"{match['align']}{match['sign']}{match['flags']}{width}{match['grouping']}"
        f"{'.' + precision if precision else ''}{match['type']}{match['hyphen']}"
        f"{match['truncate']}"
    )
