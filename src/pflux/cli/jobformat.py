"""`pflux jobs` output: flux-jobs' format mini-language over the jobs job-list returns.

A format is Python's ``str.format`` syntax over job fields (``{id.f58:>12}``,
``{name:<10.10+}``) with flux-jobs' additions (flux-core ``flux-jobs(1)``):

- conversions ``!d`` (a datetime; a strftime format, then ``::`` and the spec),
  ``!D`` (ISO 8601), ``!F`` (Flux standard duration, as ``flux jobs`` prints
  it), ``!H`` (h:mm:ss) and ``!P`` (a percentage);
- a spec ending in ``h`` shows an empty value as ``-``, one ending in ``+``
  marks a truncated value with ``+``;
- a field prefixed ``?:`` is dropped when it is empty for every job, ``+:``
  widens to its widest value, ``?+:`` does both;
- a leading ``sort:KEY[,-KEY...]`` sorts the jobs.
"""

from __future__ import annotations

import os

# string.Formatter's parse, without importing string (which imports re)
from _string import formatter_parser  # type: ignore[import-not-found]

from _pfluxcore import outputformat as _out

from pflux.cli.jobfields import JobInfo, heading, is_field, number
from pflux.cli.printable import printable, printable_value
from pflux.errors import PfluxError
from pflux.spec.duration import format_short as fsd

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any, Final


class FormatError(PfluxError):
    """A format that cannot be used: its message says where it is wrong."""


# --- named formats -------------------------------------------------------------------------

NAMED_FORMATS: Final[dict[str, tuple[str, str]]] = {
    "default": (
        "job id, user, name, status, tasks, nodes, time and state details",
        "{id.f58:>12} ?:{queue:<8.8} +:{username:<8} {name:<10.10+} "
        "{status_abbrev:>2.2} {ntasks:>6} {nnodes:>6h} "
        "{contextual_time!F:>8h} {contextual_info}",
    ),
    "cute": (
        "the default, with the status as a picture",
        "{id.f58:>12} ?:{queue:<8.8} +:{username:<8} {name:<10.10+} "
        "{status_emoji:>5.5} {ntasks:>6} {nnodes:>6h} "
        "{contextual_time!F:>8h} {contextual_info}",
    ),
    "long": (
        "the default, with the full status, submit time and time left",
        "{id.f58:>12} ?:{queue:<8.8} +:{username:<8} {name:<10.10+} "
        "{status:>9.9} {ntasks:>6} {nnodes:>6h} "
        "{t_submit!d:%b%d %R::>12} {t_remaining!F:>12h} "
        "{contextual_time!F:>8h} {contextual_info}",
    ),
    "deps": (
        "urgency, priority, state and outstanding dependencies",
        "{id.f58:>12} ?:{queue:<8.8} {name:<10.10+} {urgency:<3} "
        "{priority:<12} {state:<8.8} {dependencies}",
    ),
    "endreason": (
        "when and why each job ended",
        "{id.f58:>12} ?:{queue:<8.8} +:{username:<8} {name:<10.10+} "
        "{status_abbrev:>2.2} {t_inactive!d:%b%d %R::>12h} {inactive_reason}",
    ),
}


def resolve_format(name: str) -> str:
    """The format string a ``--format`` value names (a string with ``{`` is itself)."""
    if "{" in name:
        return name
    if name == "default":
        override = os.environ.get("PFLUX_JOBS_FORMAT_DEFAULT") or os.environ.get(
            "FLUX_JOBS_FORMAT_DEFAULT"
        )
        if override:
            name = override
            if "{" in name:
                return name
    entry = NAMED_FORMATS.get(name)
    if entry is None:
        import re

        suggestion = re.sub(r"\w+", r"{\g<0>}", name)
        raise FormatError(f"--format: No such format {name} (Did you mean '{suggestion}'?)")
    return entry[1]


def format_help() -> str:
    lines = ["", "Named pflux jobs formats (-o NAME):", ""]
    lines += [f"  {name:<12} {description}" for name, (description, _) in NAMED_FORMATS.items()]
    return "\n".join(lines) + "\n"


def format_config(name: str) -> str:
    entry = NAMED_FORMATS.get(name)
    if entry is None:
        raise FormatError(f"--format: No such format {name}")
    description, fmt = entry
    return f'[formats.{name}]\ndescription = "{description}"\nformat = "{fmt}"\n'


# --- conversions and specs -----------------------------------------------------------------


class _When:
    """A timestamp for ``!d``: ``{t!d:%H:%M::>10}`` is a strftime format, then a spec."""

    __slots__ = ("timestamp",)

    def __init__(self, timestamp: float) -> None:
        self.timestamp = timestamp

    def __format__(self, spec: str) -> str:
        from datetime import datetime

        when = datetime.fromtimestamp(self.timestamp) if self.timestamp else None
        return _out.format_time(when, spec)

    def __str__(self) -> str:
        return format(self, "")


def convert(value: Any, conversion: str) -> Any:
    """Apply a ``!`` conversion; a value that is not a number converts to ``""``. Text
    comes out printable (``pflux.cli.printable``): a job name cannot forge a row."""
    if not conversion:
        return printable_value(value)
    if conversion == "s":
        return printable(str(value))
    if conversion == "r":
        return repr(value)
    if conversion == "a":
        return ascii(value)
    amount = number(value)
    if conversion == "d":
        return _When(amount or 0.0)
    if amount is None:
        return ""
    if conversion == "D":
        return _out.iso(amount)
    if conversion == "F":
        return fsd(amount)
    if conversion == "H":
        return _out.hms(amount)
    return _out.percent(amount)


def format_value(value: Any, spec: str) -> str:
    """Format one converted value, with the ``h`` and ``+`` spec suffixes."""
    if isinstance(value, _When):
        return _format(value, spec)
    truncate = spec.endswith("+")
    if truncate:
        spec = spec[:-1]
    value, spec = _out.hyphenated(value, spec)
    try:
        out = format(value, spec)
    except (ValueError, TypeError, OverflowError):
        # an empty or unexpected value under a numeric spec: keep only width and alignment
        out = _format(str(value), _SpecParts(spec).layout(), spec)
    return _out.mark_cut(out, value) if truncate else out


def _format(value: Any, spec: str, shown: str | None = None) -> str:
    try:
        return format(value, spec)
    except (ValueError, TypeError, OverflowError) as exc:
        raise FormatError(f"Error in user format: spec '{shown or spec}': {exc}") from None


#: a spec's parts after fill and align, in order: each one character of its set, but
#: width and precision (".DIGITS"), which are digits
_SPEC_PARTS: Final = (
    ("sign", "-+ "),
    ("z", "z"),
    ("alt", "#"),
    ("zero", "0"),
    ("width", None),
    ("grouping", "_,"),
    ("precision", None),
    ("type", "bcdeEfFgGnosxX%"),
    ("hyphen", "h"),
    ("truncate", "+"),
)


def spec_parts(spec: str) -> dict[str, str] | None:
    """A format spec's parts (Python's format spec with pflux's ``h`` and ``+`` after
    it), each "" where absent; None if ``spec`` is not one."""
    parts = dict.fromkeys(("fill", "align"), "")
    at = 0
    if len(spec) > 1 and spec[1] in "<>=^":
        parts["fill"], parts["align"], at = spec[0], spec[1], 2
    elif spec[:1] and spec[0] in "<>=^":
        parts["align"], at = spec[0], 1
    for name, chars in _SPEC_PARTS:
        parts[name] = ""
        if chars is not None:
            if spec[at : at + 1] and spec[at] in chars:
                parts[name], at = spec[at], at + 1
            continue
        start = at + 1 if name == "precision" else at
        if name == "precision" and spec[at : at + 1] != ".":
            continue
        end = start
        while end < len(spec) and spec[end].isdecimal():
            end += 1
        if name == "precision" and end == start:
            return None  # a "." with no digits
        parts[name], at = spec[start:end], end
    return parts if at == len(spec) else None


class _SpecParts:
    """A format spec split into its parts (after a ``!d`` time format and ``::``)."""

    __slots__ = ("parts", "prefix")

    def __init__(self, spec: str) -> None:
        self.prefix = ""
        if "::" in spec:
            cut = spec.index("::") + 2
            self.prefix, spec = spec[:cut], spec[cut:]
        self.parts: dict[str, str] = spec_parts(spec) or {}

    @property
    def width(self) -> int:
        return int(self.parts.get("width") or 0)

    def widen(self, width: int) -> None:
        """Set the width (and a string precision below it) to ``width``."""
        parts = self.parts
        if not parts:
            return  # not a spec this understands: leave it as it is
        parts["width"] = str(width)
        precision = parts.get("precision")
        if precision and int(precision) < width and parts.get("type", "") in ("", "s"):
            parts["precision"] = str(width)

    def layout(self) -> str:
        """Only alignment and width, as headings use."""
        return f"{self.parts.get('align', '')}{self.parts.get('width', '')}"

    def __str__(self) -> str:
        if not self.parts:
            return self.prefix
        p = self.parts
        precision = f".{p['precision']}" if p["precision"] else ""
        return (
            f"{self.prefix}{p['fill']}{p['align']}{p['sign']}{p['z']}{p['alt']}{p['zero']}"
            f"{p['width']}{p['grouping']}{precision}{p['type']}{p['hyphen']}{p['truncate']}"
        )


# --- formats -------------------------------------------------------------------------------


_SENTINELS: Final = ("?+:", "?:", "+:")  # longest first


class _Part:
    """Literal text and the field after it (``field`` None for trailing text)."""

    __slots__ = ("conversion", "field", "spec", "text")

    def __init__(self, text: str, field: str | None, spec: str, conversion: str) -> None:
        self.text = text
        self.field = field
        self.spec = spec
        self.conversion = conversion

    def render(self, job: JobInfo) -> str:
        if self.field is None:
            return self.text
        return self.text + format_value(convert(job.get(self.field), self.conversion), self.spec)


def sort_value(value: Any) -> tuple[int, float, str]:
    """Sort unset values first, then numbers (numeric strings too), then other text."""
    if value is None or (isinstance(value, str) and value in ("", "-")):
        return (0, 0.0, "")
    amount = number(value)
    if amount is not None:
        return (1, amount, "")
    text = str(value)
    try:
        return (1, float(text), "")
    except ValueError:
        return (2, 0.0, text)


def _sort_key(field: str) -> Callable[[JobInfo], tuple[int, float, str]]:
    return lambda job: sort_value(job.get(field))


class JobFormat:
    """A parsed format: render jobs, their heading, sort and drop or widen fields."""

    def __init__(self, fmt: str) -> None:
        self.sort_keys: list[tuple[str, bool]] = []
        if fmt.startswith("sort:"):
            import re

            match = re.match(r"sort:([^{\s]+)( ?)", fmt)
            if match:
                self.set_sort_keys(match[1])
                fmt = fmt[match.end() :]
        try:
            parsed = list(formatter_parser(fmt))
        except ValueError as exc:
            raise FormatError(f"Error in user format: {exc}") from None
        self.parts = [
            _Part(text, field, spec or "", conv or "") for text, field, spec, conv in parsed
        ]
        for part in self.parts:
            self._check(part)

    @staticmethod
    def _check(part: _Part) -> None:
        if part.field is None:
            return
        if not is_field(part.field):
            raise FormatError(f"Error in user format: Unknown format field: {part.field}")
        if part.conversion not in ("", "d", "D", "F", "H", "P", "s", "r", "a"):
            raise FormatError(
                f"Error in user format: Unknown conversion specifier {part.conversion}"
            )
        if "{" in part.spec:
            raise FormatError(f"Error in user format: nested fields are not supported: {part.spec}")
        # a !d spec without ``::`` is a strftime format; any other must be a format spec
        spec = part.spec.partition("::")[2] if "::" in part.spec else part.spec
        if (part.conversion != "d" or "::" in part.spec) and spec_parts(spec) is None:
            raise FormatError(
                f"Error in user format: Invalid format specifier '{spec}' for field {part.field}"
            )

    @property
    def fields(self) -> list[str]:
        """Every field the format (and its sort keys) reads."""
        named = [part.field for part in self.parts if part.field is not None]
        return list(dict.fromkeys([*named, *(key for key, _ in self.sort_keys)]))

    def set_sort_keys(self, keys: str) -> None:
        """``KEY,-KEY,...``: sort on each key in turn, ``-`` for descending."""
        self.sort_keys = []
        for item in keys.split(","):
            key = item.strip()
            if not key:
                continue
            reverse = key.startswith("-")
            key = key.removeprefix("-")
            if not is_field(key):
                raise FormatError(f"Invalid sort key: {key}")
            self.sort_keys.append((key, reverse))

    def sort(self, jobs: list[JobInfo]) -> None:
        for key, reverse in reversed(self.sort_keys):
            jobs.sort(key=_sort_key(key), reverse=reverse)

    def format(self, job: JobInfo) -> str:
        return "".join(part.render(job) for part in self.parts)

    def header(self) -> str:
        out = []
        for part in self.parts:
            out.append(part.text)
            if part.field is not None:
                out.append(_format(heading(part.field), _SpecParts(part.spec).layout()))
        return "".join(out)

    def filtered(self, jobs: Iterable[JobInfo], *, no_header: bool = False) -> JobFormat:
        """This format with ``?:`` fields dropped if empty for all ``jobs``, ``+:`` widened."""
        marked: list[tuple[_Part, str]] = []
        for part in self.parts:
            sentinel = next((s for s in _SENTINELS if part.text.endswith(s)), None)
            if sentinel is not None and part.field is not None:
                marked.append((part, sentinel))
        result = type(self).__new__(type(self))
        result.__dict__.update(self.__dict__)  # copy.copy's, without loading copy
        if not marked:
            return result
        empty = _out.empty_outputs()
        widest = {id(part): 0 for part, _ in marked}
        for job in jobs:
            for part, _ in marked:
                value = format_value(convert(job.get(part.field or ""), part.conversion), "")
                if value not in empty:
                    widest[id(part)] = max(widest[id(part)], len(value))
        kind = {id(part): sentinel for part, sentinel in marked}
        parts = []
        for part in self.parts:
            sentinel = kind.get(id(part))
            if sentinel is None:
                parts.append(part)
                continue
            if "?" in sentinel and widest[id(part)] == 0:
                continue
            spec = part.spec
            if "+" in sentinel:
                parsed = _SpecParts(spec)
                title = 0 if no_header else len(heading(part.field or ""))
                parsed.widen(max(parsed.width, title, widest[id(part)]))
                spec = str(parsed)
            parts.append(_Part(part.text[: -len(sentinel)], part.field, spec, part.conversion))
        result.parts = parts
        return result
