"""``pflux resource list``: the instance's resources by state, as ``flux resource list`` shows them.

It asks the scheduler (``sched.resource-status``) for all, allocated and down
resources and prints one line per state: ``free`` (neither allocated nor
down), ``allocated``, ``down``, and on request ``up`` and ``all``.  Output
formats are Python format strings over the fields below, with flux's
sentinels: ``?:`` drops a field that is empty on every line, ``+:`` widens it
to its widest value, ``?+:`` does both; a spec ending in ``+`` marks a value
cut short by its precision, one ending in ``h`` prints ``-`` for an empty value.
"""

from __future__ import annotations

import argparse
import re
import string
import sys
from collections.abc import Sequence
from typing import Any

from pflux.cli import base
from pflux.errors import HostlistError, IdsetError, PfluxError, ResourceError

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
    lister.add_argument("--skip-empty", action="store_true", help="skip lines with no resources")
    lister.add_argument("-n", "--no-header", action="store_true", help="suppress the header")
    lister.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    args = parser.parse_args(argv)
    return base.run("resource", lambda: _list(args))


def _list(args: argparse.Namespace) -> int:
    if args.format == "help":
        sys.stdout.write("\nConfigured flux-resource list formats:\n\n")
        for name, (description, _) in FORMATS.items():
            sys.stdout.write(f"  {name:<8} {description}\n")
        return 0
    fmt = FORMATS[args.format][1] if args.format in FORMATS else args.format
    formatter = ResourceFormat(fmt)  # check the format before asking the instance
    states = _states(args.states)
    sets = _fetch(args.uri)
    if args.include is not None:
        sets = _include(sets, args.include)
    rows = [_row(state, sets[state]) for state in states]
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


def _fetch(uri: str | None) -> dict[str, Any]:
    """all, allocated and down from the scheduler; up and free worked out from them."""
    from pflux.api import Client
    from pflux.spec.resource import ResourceSet

    with Client(uri) as client:
        status = client.resource_status()
    try:
        sets = {
            name: ResourceSet.from_json(status.get(name), allow_empty=True)
            for name in ("all", "allocated", "down")
        }
    except (ResourceError, AttributeError) as exc:
        raise PfluxError(f"sched.resource-status: unexpected reply: {exc}") from None
    sets["up"] = sets["all"] - sets["down"]
    sets["free"] = sets["up"] - sets["allocated"]
    return sets


def _include(sets: dict[str, Any], targets: str) -> dict[str, Any]:
    """Keep only the ranks named by an idset, or the ranks of the hosts of a hostlist."""
    from pflux.spec import hostlist
    from pflux.spec.idset import IdSet
    from pflux.spec.resource import ResourceSet

    try:
        ranks = set(IdSet.decode(targets))
    except IdsetError:
        try:
            hosts = set(hostlist.decode(targets))
        except HostlistError as exc:
            raise PfluxError(f"--include: {exc}") from None
        ranks = {rank for rank, t in sets["all"].targets.items() if t.hostname in hosts}
    return {
        name: ResourceSet({r: t for r, t in rs.targets.items() if r in ranks})
        for name, rs in sets.items()
    }


def _row(state: str, resources: Any) -> dict[str, Any]:
    from pflux.spec import hostlist

    return {
        "state": state,
        "queue": "",
        "properties": "",
        "propertiesx": "",
        "nnodes": resources.nnodes,
        "ncores": resources.ncores(),
        "ngpus": resources.ngpus(),
        "ranks": resources.ranks().encode(),
        "nodelist": hostlist.encode(resources.nodelist) if resources else "",
        "rlist": resources.summary(),
    }


class _Formatter(string.Formatter):
    """str.format with flux's spec extensions: ``h`` (hyphen if empty), ``+`` (mark a cut)."""

    def format_field(self, value: Any, format_spec: str) -> str:
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

    def __init__(self, fmt: str) -> None:
        try:
            parsed = list(_Formatter().parse(fmt))
        except ValueError as exc:
            raise PfluxError(f"invalid format {fmt!r}: {exc}") from None
        self.parts: list[tuple[str, str | None, str, str | None]] = []
        for text, field, spec, conv in parsed:
            if field is not None and field not in HEADINGS:
                raise PfluxError(f"Unknown format field: {field}")
            self.parts.append((text, field, spec or "", conv))

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
            lines.append(formatter.format(header, **HEADINGS))
        for row in rows:
            line = formatter.format(fmt, **row)
            if line and not line.isspace():
                lines.append(line)
        return "".join(line + "\n" for line in lines)

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
                heading = 0 if no_header else len(HEADINGS[field])
                width = max(int(match["width"] or 0), heading, widest)
                parts.append((text[: -len(sentinel)], field, _with_width(match, width), conv))
            else:
                parts.append((text[: -len(sentinel)], field, spec, conv))
        return parts


def _join(text: str, field: str | None, spec: str, conv: str | None) -> str:
    if field is None:
        return text.replace("{", "{{").replace("}", "}}")
    conversion = f"!{conv}" if conv else ""
    return f"{text.replace('{', '{{').replace('}', '}}')}{{{field}{conversion}:{spec}}}"


def _header_spec(spec: str) -> str:
    """Only the alignment and width of a spec apply to a heading."""
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
