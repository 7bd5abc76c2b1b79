"""``flux.util``: the helpers flux-core's commands and scripts share: Flux Standard
Durations (``fsd``, ``parse_fsd``), dates (``parse_datetime``), ``CLIMain`` (a
command's error handling and exit code), argparse actions and help formatting,
dotted-key dicts, payload and topic encoding, ``UtilFormatter``'s conversions, and
``OutputFormat``, the format of a command's table (header, sort keys, sentinels),
with ``Deduplicator`` for its like lines and ``Tree`` for pstree-like drawings, and
``UtilConfig``, a tool's configuration files (named formats).
"""

from __future__ import annotations

import argparse
import errno
import json
import logging
import math
import os
import re
import shutil
import sys
from collections import namedtuple
from datetime import datetime
from pathlib import Path
from string import Formatter

from _pfluxcore import datetimes, duration, outputformat

from flux._fileref import fileref
from flux._fsd import parse_fsd

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from typing import Any, Callable, ClassVar, Mapping, Sequence

__all__ = ["CLIMain", "check_future_error", "encode_payload", "encode_topic", "parse_fsd"]


def check_future_error(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a future's method so its OSError carries the future's error text
    (``error_string()`` of the object or of its ``handle``) when there is one."""

    def func_wrapper(calling_obj: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return func(calling_obj, *args, **kwargs)
        except OSError as error:
            future = getattr(calling_obj, "handle", calling_obj)
            text = getattr(future, "error_string", None)
            errmsg = text() if callable(text) else None
            if not errmsg:
                raise error from None
            raise OSError(error.errno, errmsg) from None

    return func_wrapper


def interruptible(func: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a blocking future method so Ctrl-C ends the wait: SIGINT's default
    action is put back while it runs (main thread, outside the reactor only)."""

    def func_wrapper(future: Any, *args: Any, **kwargs: Any) -> Any:
        import signal
        import threading

        handle = future.get_flux()
        active = (
            threading.current_thread() is threading.main_thread()
            and handle is not None
            and not handle.reactor_running()
        )
        if active:
            handler = signal.signal(signal.SIGINT, signal.SIG_DFL)
        try:
            return func(future, *args, **kwargs)
        finally:
            if active:
                signal.signal(signal.SIGINT, handler)

    return func_wrapper


def encode_payload(payload: Any) -> bytes | None:
    """A message payload as bytes: str as UTF-8, bytes as is, anything else as JSON;
    None stays None (no payload)."""
    if payload is None:
        return None
    if isinstance(payload, str):
        return payload.encode("UTF-8", errors="surrogateescape")
    if isinstance(payload, bytes):
        return payload
    return json.dumps(payload, ensure_ascii=False).encode("UTF-8", errors="surrogateescape")


def encode_topic(topic: Any) -> bytes:
    """A message topic as UTF-8 bytes; None is EINVAL, another type TypeError."""
    if topic is None:
        raise OSError(errno.EINVAL, "Topic must not be None/NULL")
    if isinstance(topic, str):
        return topic.encode("UTF-8")
    if not isinstance(topic, bytes):
        raise TypeError(errno.EINVAL, f"Topic must be a string, not {type(topic)}")
    return topic


class _FluxHelpFormatter(argparse.HelpFormatter):
    """Options shown as ``-l, --long=ARG``, a long-only option indented to line up."""

    def _format_action_invocation(self, action: argparse.Action) -> str:
        if not action.option_strings:
            (metavar,) = self._metavar_formatter(action, action.dest)(1)
            return str(metavar)
        opts = list(action.option_strings)
        text = ", ".join(opts)
        if len(opts) == 1 and len(opts[0]) > 2:
            text = "    " + opts[0]
        if action.nargs == 0:
            return text
        return text + "=" + self._format_args(action, action.dest.upper())


class _FluxRawDescriptionHelpFormatter(_FluxHelpFormatter, argparse.RawDescriptionHelpFormatter):
    pass


def help_formatter(
    argwidth: int = 40, raw_description: bool = False
) -> Callable[[str], argparse.HelpFormatter]:
    """A ``formatter_class`` for argparse: flux's option layout, options up to
    ``argwidth`` wide; ``raw_description`` keeps the description's line breaks."""
    cls = _FluxRawDescriptionHelpFormatter if raw_description else _FluxHelpFormatter
    return lambda prog: cls(prog, max_help_position=argwidth)


def get_treedict(in_dict: Mapping[str, Any], key: str, default: Any = None) -> Any:
    """``in_dict[a][b][c]`` for the key ``a.b.c``, or ``default`` if a level is missing."""
    if "." in key:
        first, rest = key.split(".", 1)
        try:
            return get_treedict(in_dict[first], rest, default)
        except KeyError:
            return default
    return in_dict.get(key, default)


def set_treedict(in_dict: dict[str, Any], key: str, val: Any) -> None:
    """``in_dict[a][b][c] = val`` for the key ``a.b.c``, making levels as needed."""
    first, dot, rest = key.partition(".")
    if dot:
        set_treedict(in_dict.setdefault(first, {}), rest, val)
    else:
        in_dict[key] = val


def del_treedict(in_dict: dict[str, Any], key: str, remove_empty: bool = False) -> None:
    """``del in_dict[a][b][c]`` for the key ``a.b.c`` (KeyError if a level is missing);
    ``remove_empty`` also removes the levels this leaves empty."""
    first, dot, rest = key.partition(".")
    if not dot:
        del in_dict[key]
        return
    del_treedict(in_dict[first], rest, remove_empty=remove_empty)
    inner = in_dict[first]
    if remove_empty and isinstance(inner, dict) and not inner:
        del in_dict[first]


class Fileref(dict):  # type: ignore[type-arg]
    """An RFC 37 file object, a dict (so JSON as it is): ``data`` a dict (kept, to be
    encoded as JSON), text or base64 already encoded as ``encoding`` says, or else
    the path of a file read now (as UTF-8 if it is, else base64); ``perms`` its mode."""

    def __init__(self, data: Any, perms: int = 0o600, encoding: str | None = None) -> None:
        super().__init__(fileref(data, perms, encoding))


class TreedictAction(argparse.Action):
    """``key=value`` arguments into one dict, dotted keys as levels, values read as
    JSON where they are."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        result: dict[str, Any] = {}
        for arg in values:
            key, eq, text = arg.partition("=")
            if not eq:
                raise ValueError(f"Missing required value for key {arg}")
            try:
                val = json.loads(text)
            except (json.JSONDecodeError, TypeError):
                val = text
            set_treedict(result, key, val)
            setattr(namespace, self.dest, result)


class FilterAction(argparse.Action):
    """Store the value and mark the namespace ``filtered``."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.filtered = True


class FilterActionSetUpdate(argparse.Action):
    """Add the comma-separated values to the set at ``dest``; mark ``filtered``."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        namespace.filtered = True
        getattr(namespace, self.dest).update(values.split(","))


class FilterActionUser(argparse.Action):
    """Store the value; mark the namespace ``filtered`` and ``filtereduser``."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        namespace.filtered = True
        namespace.filtereduser = True
        setattr(namespace, self.dest, values)


class FilterTrueAction(argparse.Action):
    """A flag storing ``const`` (True); marks the namespace ``filtered``."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str,
        const: Any = True,
        default: Any = False,
        required: bool = False,
        help: str | None = None,
        metavar: Any = None,
    ) -> None:
        super().__init__(
            option_strings=option_strings,
            dest=dest,
            nargs=0,
            const=const,
            default=default,
            help=help,
        )

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        setattr(namespace, self.dest, self.const)
        namespace.filtered = True


class YesNoAction(argparse.Action):
    """An option taking ``yes`` or ``no``, stored as a bool."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str,
        help: str | None = None,
        metavar: str = "[yes|no]",
    ) -> None:
        super().__init__(option_strings=option_strings, dest=dest, help=help, metavar=metavar)

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        if values not in ("yes", "no"):
            raise ValueError(f"{option_string} requires either 'yes' or 'no'")
        setattr(namespace, self.dest, values == "yes")


class ColorAction(argparse.Action):
    """``--color[=WHEN]``: always (the option alone), never or auto (the default, or
    never when ``NO_COLOR`` is set), stored as a ``ColorWhen`` with ``enabled``."""

    class ColorWhen(str):
        """A WHEN string; ``enabled`` says whether to color now."""

        @property
        def enabled(self) -> bool:
            if self in ("always", "never"):
                return self == "always"
            return sys.stdout.isatty()

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str,
        nargs: Any = "?",
        default: str = "auto",
        metavar: str = "WHEN",
        help: str = "Use color; WHEN can be 'never', 'always' or 'auto' (default)",
        **kwargs: Any,
    ) -> None:
        if default == "auto" and os.environ.get("NO_COLOR"):
            default = "never"
        super().__init__(
            option_strings,
            dest,
            nargs=nargs,
            default=ColorAction.ColorWhen(default),
            metavar=metavar,
            help=help,
            **kwargs,
        )

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: Any = None) -> None:
        if values is None:
            values = "always"
        if values not in ("auto", "always", "never"):
            parser.error(f"Invalid argument to --color: '{values}'")
        setattr(namespace, self.dest, ColorAction.ColorWhen(values))


class CLIMain:
    """Run a command's main function: logging set up (level from
    ``FLUX_PYCLI_LOGLEVEL``), an exception logged as ``name: ERROR: message`` with exit
    code 1, ``sys.exit`` codes kept; the traceback is logged at DEBUG."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self.logger = logging.getLogger() if logger is None else logger

    def __call__(self, main_func: Callable[[], Any]) -> None:
        level = int(os.environ.get("FLUX_PYCLI_LOGLEVEL", logging.INFO))
        logging.basicConfig(level=level, format="%(name)s: %(levelname)s: %(message)s")
        exit_code: Any = 0
        try:
            main_func()
        except SystemExit as exc:
            exit_code = exc
        except Exception as exc:
            import traceback

            exit_code = 1
            errmsg = str(getattr(exc, "strerror", None) or exc)
            filename = getattr(exc, "filename", None)
            if filename:
                errmsg += f": '{filename}'"
            self.logger.error(errmsg)
            self.logger.debug(traceback.format_exc())
        finally:
            logging.shutdown()
            sys.exit(exit_code)


def fsd(secs: float) -> str:
    """``secs`` as a short Flux Standard Duration (``0s``, ``1.500s``, ``2.5m``, ``inf``)."""
    return "inf" if math.isinf(secs) else duration.short(secs)


def parse_datetime(string: str, now: datetime | None = None) -> datetime:
    """A local datetime from ``now``, ``+FSD``/``-FSD`` (from ``now``), an ISO 8601
    date or date-time, or English as flux-core's parser reads it
    (``_pfluxcore.datetimes``: ``Jun 10, 2021 8am``, ``noon tomorrow``, ``last wed``,
    ``next week``, ``in 10 min``, ``3 days ago``...). ValueError names the string
    otherwise."""
    if now is None:
        now = datetime.now().astimezone()
    if string == "now":
        return now
    if string.startswith(("+", "-")):
        seconds = parse_fsd(string[1:])
        sign = 1 if string[0] == "+" else -1
        return datetime.fromtimestamp(now.timestamp() + sign * seconds).astimezone()
    when: datetime | None
    try:
        when = datetime.fromisoformat(string.strip())
    except ValueError:
        when = datetimes.calendar_date(string, now)
    if when is None:
        seconds_from_now = datetimes.offset(string)
        if seconds_from_now is None:
            raise ValueError(f'Invalid datetime: "{string}"')
        return datetime.fromtimestamp(now.timestamp() + seconds_from_now).astimezone()
    return when.astimezone() if when.tzinfo is None else when


class UtilDatetime(datetime):
    """A datetime whose format is ``STRFTIME::SPEC``: strftime (``%FT%T`` by default)
    then a Python spec for width and alignment; the epoch formats as empty (``-`` with
    the ``h`` suffix)."""

    def __format__(self, fmt: str) -> str:
        return outputformat.format_time(None if self == datetime.fromtimestamp(0.0) else self, fmt)


def empty_outputs() -> tuple[str, ...]:
    """The texts a value shows when it is unset (the ``h`` suffix shows them as ``-``)."""
    return outputformat.empty_outputs()


class UtilFormatter(Formatter):
    """``str.format`` with flux's conversions: ``!d`` a timestamp as a datetime (with
    ``UtilDatetime``'s spec), ``!D`` as ISO 8601, ``!F`` seconds as an FSD, ``!H`` as
    H:MM:SS, ``!P`` a fraction as a percent; and spec suffixes ``h`` (an empty value as
    ``-``), ``W`` (width counted in terminal columns) and ``+`` (a cut value ends in
    ``+``)."""

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if conversion not in ("d", "D", "F", "H", "P"):
            return super().convert_field(value, conversion)
        try:
            return _CONVERSIONS[conversion](value)
        except (TypeError, ValueError):
            if str(value) == "":
                return UtilDatetime.fromtimestamp(0.0) if conversion == "d" else ""
            raise

    def format_field(self, value: Any, format_spec: str) -> str:
        spec = format_spec
        marks_cut = spec.endswith("+")
        if marks_cut:
            spec = spec[:-1]
        if not isinstance(value, UtilDatetime):
            value, spec = outputformat.hyphenated(value, spec)
        if spec.endswith("W"):
            spec = spec[:-1] + "s"
            found = re.match(r"^([<>])(\d+)s$", spec)
            if found and isinstance(value, str):
                extra = _columns(value) - len(value)
                width = int(found[2])
                if 0 < extra < width:
                    spec = f"{found[1]}{width - extra}s"
        result = str(super().format_field(value, spec))
        return outputformat.mark_cut(result, value) if marks_cut else result


def _columns(text: str) -> int:
    """Terminal columns of ``text``: wide (East Asian, emoji) characters take two."""
    import unicodedata

    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


_CONVERSIONS: dict[str, Callable[[Any], Any]] = {
    "d": UtilDatetime.fromtimestamp,
    "D": outputformat.iso,
    "F": fsd,
    "H": outputformat.hms,
    "P": outputformat.percent,
}


class AltField:
    """A value with a default text and an ``ascii`` one (``{field.ascii}``)."""

    def __init__(self, default: str, ascii: str) -> None:
        self.default = default
        self.ascii = ascii

    def __str__(self) -> str:
        return self.default

    def __format__(self, fmt: str) -> str:
        return format(str(self), fmt)


def dict_merge(src: dict[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """Merge ``new`` into ``src`` (nested dicts merged, other values replaced); ``src``."""
    for key, value in new.items():
        if isinstance(src.get(key), dict) and isinstance(value, dict):
            dict_merge(src[key], value)
        else:
            src[key] = value
    return src


def xdg_searchpath(subdir: str = "") -> list[Path]:
    """Where flux's configuration is looked for, first first: ``$XDG_CONFIG_HOME`` (or
    ``~/.config``) then each of ``$XDG_CONFIG_DIRS`` (or ``/etc/xdg``), each with
    ``flux/SUBDIR``."""
    dirs = [os.getenv("XDG_CONFIG_HOME") or f"{Path.home()}/.config"]
    dirs += (os.getenv("XDG_CONFIG_DIRS") or "/etc/xdg").split(":")
    return [Path(directory, "flux", subdir) for directory in dirs]


class DisplayValue:
    """A shown value made comparable whatever its type, for sorting: unset (None, "",
    "-") first, then numbers (and numeric strings, compared as numbers), then text."""

    __slots__ = ("_sort_value", "_type_order", "value")

    EMPTY, NUMERIC, STRING = 0, 1, 2

    def __init__(self, value: Any) -> None:
        self.value = value
        self._sort_value: Any = 0
        if value is None or value in ("", "-"):
            self._type_order = self.EMPTY
            return
        try:
            self._sort_value = float(value)
            self._type_order = self.NUMERIC
        except (TypeError, ValueError):
            try:
                self._sort_value = float(str(value))
                self._type_order = self.NUMERIC
            except ValueError:
                self._sort_value = str(value)
                self._type_order = self.STRING

    def _key(self) -> tuple[int, Any]:
        return self._type_order, self._sort_value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DisplayValue) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __lt__(self, other: DisplayValue) -> bool:
        return bool(self._key() < other._key())

    def __repr__(self) -> str:
        return (
            f"DisplayValue({self.value!r}, type_order={self._type_order},"
            f" sort_value={self._sort_value!r})"
        )


_SENTINELS = {"?+:": "both", "?:": "filter", "+:": "maxwidth"}  # longest first


class OutputFormat:
    """A command's output format: ``{field:spec}`` fields (each named in ``headings``),
    a header row from it, a ``sort:KEY,-KEY`` prefix, and flux's sentinels before a
    field: ``?:`` drops it when every item has it empty, ``+:`` widens it to its widest
    value, ``?+:`` both. ``print_items`` sorts, filters and prints a list of items."""

    formatter: type[Formatter] = UtilFormatter
    headings: Mapping[str, str] = {}
    prepend = "0."
    _sort_prefix_re = re.compile(r"sort:([^{\s]+)")

    class HeaderFormatter(UtilFormatter):
        """Formats the header row: a field's name is looked up whole (dots and all)."""

        def get_field(self, field_name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
            if field_name in kwargs:
                return kwargs[field_name], None
            return super().get_field(field_name, args, kwargs)

    class FormatSpec:
        """A Python format spec in its parts (and flux's ``h`` and ``+`` suffixes)."""

        components = (
            "fill",
            "align",
            "sign",
            "pos_zero",
            "alt",
            "zero_pad",
            "width_str",
            "grouping",
            "decimal",
            "precision_str",
            "type",
            "hyphen",
            "wide",
            "truncate",
        )
        _spec_re = re.compile(
            r"(?:(?P<fill>[\s\S])?(?P<align>[<>=^]))?(?P<sign>[- +])?(?P<pos_zero>z)?"
            r"(?P<alt>#)?(?P<zero_pad>0)?(?P<width_str>\d+)?(?P<grouping>[_,])?"
            r"(?:(?P<decimal>\.)(?P<precision_str>\d+))?(?P<type>[bcdeEfFgGnosxX%])?"
            r"(?P<hyphen>h)?(?P<wide>W)?(?P<truncate>\+)?"
        )

        def __init__(self, spec: str) -> None:
            if "::" in spec:
                spec = spec[spec.find("::") + 2 :]
            found = self._spec_re.fullmatch(spec)
            parts = found.groupdict() if found else {}
            for item in self.components:
                setattr(self, item, parts.get(item) or "")

        @property
        def width(self) -> Any:
            width_str: str = getattr(self, "width_str", "")
            return int(width_str) if width_str else ""

        @width.setter
        def width(self, val: int) -> None:
            self.width_str = str(val)
            if getattr(self, "type", "") in ("s", "") and self.precision and self.precision < val:
                self.precision = val

        @property
        def precision(self) -> int:
            precision_str: str = getattr(self, "precision_str", "")
            return int(precision_str) if precision_str else 0

        @precision.setter
        def precision(self, val: int) -> None:
            self.precision_str = str(val)

        def __str__(self) -> str:
            return "".join(str(getattr(self, item)) for item in self.components)

    def __init__(
        self,
        fmt: str,
        headings: Mapping[str, str] | None = None,
        prepend: str | None = "0.",
        nullify_expansion_sentinel: bool = False,
    ) -> None:
        """Parse ``fmt``; ValueError names a field not in ``headings``. ``prepend`` goes
        before each field name (``{f}`` formats ``{0.f}``: an item's attribute)."""
        if headings is not None:
            self.headings = headings
        if prepend is not None:
            self.prepend = prepend
        self.format_list = [[part or "" for part in t] for t in Formatter().parse(fmt)]
        self.sort_keys: list[tuple[str, bool]] = []
        self._sort_has_trailing_space = True
        if self.format_list and self.format_list[0][0].startswith("sort:"):
            fmt, self.format_list[0][0] = self._parse_and_strip_sort_prefix(
                self.format_list[0][0], fmt
            )
        self.fmt = self.fmt_orig = fmt
        self._fields = [field for (_, field, _, _) in self.format_list if field]
        for field in self._fields:
            name = field[2:] if field.startswith("0.") else field
            if name and name not in self.headings:
                raise ValueError("Unknown format field: " + name)
        if self.prepend:
            self.fmt = self.get_format_prepended(self.prepend, include_sort_prefix=False)

    @property
    def fields(self) -> list[str]:
        """The fields the format shows, and its sort keys."""
        return list(set(self._fields) | {key for key, _ in self.sort_keys})

    @staticmethod
    def _calculate_width(width: int) -> int:
        return outputformat.terminal_width(width)

    @staticmethod
    def _fmt_tuple(text: str, field: str, spec: str | None, conv: str | None) -> str:
        if not field:
            return text
        spec = ":" + spec if spec else ""
        conv = "!" + conv if conv else ""
        return f"{text}{{{field}{conv}{spec}}}"

    def header_format(self) -> str:
        """The format for the header row: each field's alignment and width only."""
        parts = []
        for text, field, spec, _ in self.format_list:
            parsed = self.FormatSpec(spec)
            aligned = f"{getattr(parsed, 'align', '')}{parsed.width}"
            parts.append(self._fmt_tuple(text, field, aligned, None))
        return "".join(parts)

    def header(self, width: int = -1) -> str:
        """The header row; ``width`` > 0 cuts it there (0: the terminal's width)."""
        result = str(self.HeaderFormatter().format(self.header_format(), **self.headings))
        width = self._calculate_width(width)
        if 0 < width < len(result):
            result = result[: width - 1] + "+"
        return result

    def get_format_prepended(
        self,
        prepend: str,
        except_fields: Sequence[str] | None = None,
        include_sort_prefix: bool = True,
        nullify_expansion_sentinel: bool = False,
    ) -> str:
        """The format with ``prepend`` before each field, ``except_fields`` left out;
        ``nullify_expansion_sentinel`` makes ``+:{f:<10.10}`` plain ``{f}``."""
        parts = []
        for text, field, spec, conv in self.format_list:
            if except_fields and field in except_fields:
                if text.strip() and text.strip() not in _SENTINELS:
                    parts.append(text)
                continue
            name = prepend + field if field and not field.startswith(prepend) else field
            plain = nullify_expansion_sentinel and text.endswith("+:")
            parts.append(self._fmt_tuple("" if plain else text, name, "" if plain else spec, conv))
        prefix = self._sort_prefix() if include_sort_prefix else ""
        return prefix + "".join(parts)

    def _sort_prefix(self) -> str:
        if not self.sort_keys:
            return ""
        keys = ",".join(f"-{key}" if reverse else key for key, reverse in self.sort_keys)
        return f"sort:{keys}" + (" " if self._sort_has_trailing_space else "")

    def get_format(self, orig: bool = False, include_sort_prefix: bool = True) -> str:
        """The format (``orig``: as given), with its ``sort:`` prefix if asked."""
        fmt = self.fmt_orig if orig else self.fmt
        return (self._sort_prefix() if include_sort_prefix else "") + fmt

    def copy(
        self, except_fields: Sequence[str] | None = None, nullify_expansion: bool = False
    ) -> OutputFormat:
        """The same format, less ``except_fields``."""
        fmt = self.get_format_prepended(
            "", except_fields, nullify_expansion_sentinel=nullify_expansion
        )
        return self.__class__(fmt, headings=self.headings, prepend=self.prepend)

    def format(self, obj: Any) -> str:
        """``obj`` as a line of output."""
        try:
            return str(self.formatter().format(self.get_format(include_sort_prefix=False), obj))
        except KeyError as exc:
            raise KeyError(f"Invalid format field {exc} for {type(obj)}") from None

    def filter(self, items: Sequence[Any], no_header: bool = False) -> str:
        """The format for ``items``: ``?:`` fields empty for all of them dropped, ``+:``
        fields as wide as their widest value (or heading, unless ``no_header``)."""
        entries: list[dict[str, Any]] = []
        for index, (text, field, spec, conv) in enumerate(self.format_list):
            kind = next((_SENTINELS[s] for s in _SENTINELS if text.endswith(s)), None)
            if kind is None:
                continue
            parsed = self.FormatSpec(spec)
            widest = parsed.width or 0
            if kind != "filter" and not no_header:
                widest = max(widest, len(self.headings.get(field, "")))
            fmt = self._fmt_tuple("", "0." + field, None, conv)
            entries.append({"fmt": fmt, "index": index, "type": kind, "max": widest, "width": 0})
            entries[-1]["spec"] = parsed
        if not entries:
            return self.get_format(orig=True)
        formatter = self.formatter()
        empty = empty_outputs()
        for item in items:
            for entry in entries:
                result = formatter.format(entry["fmt"], item)
                width = 0 if result in empty else len(result)
                entry["max"] = max(entry["max"], width)
                entry["width"] = max(entry["width"], width)
        dropped = {e["index"] for e in entries if e["width"] == 0 and e["type"] != "maxwidth"}
        for entry in entries:
            if entry["index"] not in dropped and entry["type"] != "filter":
                entry["spec"].width = entry["max"]
                self.format_list[entry["index"]][2] = str(entry["spec"])
        kept = [list(x) for i, x in enumerate(self.format_list) if i not in dropped]
        for part in kept:
            for sentinel in _SENTINELS:
                part[0] = part[0].replace(sentinel, "")
        return self._sort_prefix() + "".join(self._fmt_tuple(*part) for part in kept)

    def _parse_and_strip_sort_prefix(self, sort_spec: str, fmt: str) -> tuple[str, str]:
        """Take the keys of a leading ``sort:K1,-K2`` off the format."""
        match = self._sort_prefix_re.match(sort_spec)
        rest = sort_spec
        if match:
            keys = match.group(1)
            self.set_sort_keys(keys)
            size = len("sort:") + len(keys)
            rest, fmt = sort_spec[size:], fmt[size:]
            self._sort_has_trailing_space = fmt.startswith(" ")
            if self._sort_has_trailing_space:
                fmt, rest = fmt[1:], rest[1:]
        return fmt, rest

    def set_sort_keys(self, sort_keys: str) -> None:
        """Sort by these comma-separated keys (``-KEY``: reversed); ValueError names a
        key that is no field."""
        self.sort_keys = []
        for word in (k.strip() for k in sort_keys.split(",")):
            if not word:
                continue
            reverse = word.startswith("-")
            key = word[1:] if reverse else word
            if key not in self.headings:
                raise ValueError("Invalid sort key: " + key)
            self.sort_keys.append((key, reverse))

    def sort_items(self, items: list[Any]) -> list[Any]:
        """Sort ``items`` in place by the sort keys; ``items``."""
        from operator import attrgetter

        for key, reverse in reversed(self.sort_keys):
            getter = attrgetter(key)
            items.sort(key=lambda item: DisplayValue(getter(item)), reverse=reverse)
        return items

    def print_items(
        self,
        items: list[Any],
        no_header: bool = False,
        width: int = -1,
        pre: Callable[[Any], Any] | None = None,
        post: Callable[[Any], Any] | None = None,
    ) -> None:
        """Print ``items``, sorted and filtered, under a header (unless ``no_header``);
        ``width`` as ``header``'s; ``pre``/``post`` called around each line."""
        shown = self.__class__(
            self.filter(items, no_header=no_header), headings=self.headings, prepend=self.prepend
        )
        items = self.sort_items(items)
        width = self._calculate_width(width)
        if not no_header:
            print(shown.header(width=width))
        for item in items:
            line = shown.format(item)
            if not line or line.isspace():
                continue
            if 0 < width < len(line):
                line = line[: width - 1] + "+"
            if pre is not None:
                pre(item)
            try:
                print(line)
            except UnicodeEncodeError:
                print(line.encode("utf-8", errors="surrogateescape").decode())
            if post is not None:
                post(item)


class Deduplicator:
    """Items whose formatted lines (less ``except_fields``) are alike kept once;
    ``combine(kept, new)`` merges a like item into the one kept. Iterate for the items."""

    def __init__(
        self,
        formatter: OutputFormat,
        except_fields: Sequence[str] | None = None,
        combine: Callable[[Any, Any], Any] | None = None,
    ) -> None:
        self.formatter = formatter.copy(except_fields=except_fields, nullify_expansion=True)
        self.combine = combine
        self.hash: dict[str, Any] = {}
        self.items: list[Any] = []

    def __iter__(self) -> Any:
        return iter(self.items)

    def append(self, item: Any) -> None:
        """Keep ``item``, or combine it with a kept item formatted alike."""
        key = self.formatter.format(item)
        if key not in self.hash:
            self.hash[key] = item
            self.items.append(item)
        elif self.combine is not None:
            self.combine(self.hash[key], item)


class Tree:
    """A pstree-like drawing: a label, a ``prefix`` before its branch, and children;
    with ``combine_children``, like children appended are drawn once as ``N*[label]``."""

    Connectors = namedtuple("Connectors", ["PIPE", "TEE", "ELBOW", "BLANK"])

    connector_styles: ClassVar[dict[str, Any]] = {
        "ascii": Connectors("|   ", "|-- ", "`-- ", "    "),
        "box": Connectors("\u2502   ", "\u251c\u2500\u2500 ", "\u2514\u2500\u2500 ", "    "),
        "compact": Connectors("\u2502 ", "\u251c\u2500", "\u2514\u2500", "  "),
    }

    def __init__(self, label: str, prefix: str = "", combine_children: bool = False) -> None:
        self.label = label
        self.prefix = prefix + " " if prefix else ""
        self.duplicates: dict[str, Tree] = {}
        self.duplicate_count = 1
        self.children: list[Tree] = []
        self.combine_children = combine_children

    def append(self, label: str, prefix: str = "") -> Tree:
        """A new child, or the like child already there (counted once more)."""
        if not self.combine_children:
            return self.add(label, prefix)
        key = f"{prefix}{label}"
        if key in self.duplicates:
            self.duplicates[key].increment()
        else:
            self.duplicates[key] = self.add(label, prefix, combine_children=True)
        return self.duplicates[key]

    def append_tree(self, tree: Tree) -> Tree:
        """Add ``tree`` as a child (combined with a like one when it has no children)."""
        if not self.combine_children or tree.children:
            self.children.append(tree)
            return tree
        key = f"{tree.prefix}{tree.label}"
        if key in self.duplicates:
            self.duplicates[key].increment()
        else:
            self.children.append(tree)
            self.duplicates[key] = tree
        return self.duplicates[key]

    def add(self, label: str, prefix: str = "", combine_children: bool = False) -> Tree:
        """A new child, never combined."""
        tree = Tree(label, prefix=prefix, combine_children=combine_children)
        self.children.append(tree)
        return tree

    def increment(self) -> None:
        self.duplicate_count += 1

    def _render(
        self,
        pstack: list[str] | None = None,
        connector: str = "",
        style: str = "box",
        max_level: int | None = None,
        truncate: int | None = None,
    ) -> None:
        pstack = [] if pstack is None else pstack
        if max_level is not None and len(pstack) > max_level:
            return
        label = f"{self.duplicate_count}*[{self.label}]" if self.duplicate_count > 1 else self.label
        line = f"{self.prefix}{''.join(pstack[:-1])}{connector}{label}"
        if truncate and len(line) > truncate:
            line = line[: truncate - 1] + "+"
        print(line)
        pieces = self.connector_styles[style]
        for child in self.children:
            last = child is self.children[-1]
            pstack.append(pieces.BLANK if last else pieces.PIPE)
            child._render(
                pstack,
                connector=pieces.ELBOW if last else pieces.TEE,
                style=style,
                max_level=max_level,
                truncate=truncate,
            )
            pstack.pop()

    def render(
        self,
        style: str = "box",
        level: int | None = None,
        skip_root: bool = False,
        truncate: bool = True,
    ) -> None:
        """Print the tree: ``style`` ascii, box or compact; ``level`` the deepest level
        drawn; ``skip_root`` draws the children only; ``truncate`` cuts lines at the
        terminal's width (132 when unknown)."""
        if skip_root:
            for child in self.children:
                child.render(style=style, level=level, truncate=truncate)
            return
        limit = shutil.get_terminal_size((132, 25)).columns if truncate else None
        self._render(style=style, max_level=level, truncate=limit)


def _load_toml(file: Any) -> Any:
    import importlib

    try:
        tomllib = importlib.import_module("tomllib")  # Python 3.11 or newer
    except ImportError:
        raise ValueError("TOML needs Python 3.11 or newer (tomllib)") from None
    return tomllib.load(file)


def _load_yaml(file: Any) -> Any:
    raise ValueError("YAML is not read here (the flux package is the standard library only)")


class UtilConfig:
    """A tool's configuration: ``initial_dict`` overridden by ``NAME.json`` or
    ``NAME.toml`` files of the XDG directories (the system's, then the user's), read by
    ``load()``; ``subcommand`` picks one table. Its keys read as attributes
    (``config.formats``); ``get_format_string`` resolves a named output format."""

    extension_handlers: ClassVar[dict[str, Callable[[Any], Any]]] = {
        ".toml": _load_toml,
        ".json": json.load,
        ".yaml": _load_yaml,
    }
    builtin_formats: ClassVar[dict[str, Any]] = {}

    def __init__(
        self,
        name: str,
        toolname: str | None = None,
        subcommand: str | None = None,
        initial_dict: Mapping[str, Any] | None = None,
    ) -> None:
        import copy

        self.name = name
        self.toolname = toolname
        self.dict: dict[str, Any] = copy.deepcopy(dict(initial_dict)) if initial_dict else {}
        self.config = self.dict
        self.subtable = subcommand
        self.searchpath = list(reversed(xdg_searchpath()))  # the user's last: it wins

    def load(self) -> UtilConfig:
        """Merge every configuration file found, in order; ValueError names a file
        that cannot be read. Returns self."""
        import glob

        for path in self.searchpath:
            for filepath in sorted(glob.glob(f"{path}/{self.name}.*")):
                handler = self.extension_handlers.get(Path(filepath).suffix)
                if handler is None:
                    continue
                try:
                    with open(filepath, "rb") as file:
                        conf = handler(file)
                except ValueError as exc:  # JSON's and TOML's decode errors are ValueErrors
                    raise ValueError(f"{filepath}: {exc}") from exc
                self.validate(filepath, conf)
                dict_merge(self.dict, conf)
        if self.subtable and self.subtable in self.dict:
            self.config = self.dict[self.subtable]
        return self

    def validate_formats(self, path: str, formats: Any) -> None:
        """ValueError unless ``formats`` maps names (none a builtin one) to tables with
        a string ``format`` (and maybe a ``description``)."""
        builtin = self.builtin_formats
        if self.subtable and self.subtable in builtin:
            builtin = builtin[self.subtable]
        if not isinstance(formats, dict):
            raise ValueError(f"{path}: the 'formats' key must be a mapping")
        for name, entry in formats.items():
            if name in builtin:
                raise ValueError(f"{path}: override of builtin format '{name}' not permitted")
            if not isinstance(entry, dict):
                raise ValueError(f"{path}: 'formats.{name}' must be a mapping")
            if "format" not in entry:
                raise ValueError(f"{path}: formats.{name}: required key 'format' missing")
            if not isinstance(entry["format"], str):
                raise ValueError(f"{path}: formats.{name}: 'format' key must be a string")

    def validate(self, path: str, conf: Any) -> None:
        """Check a file's configuration before it is merged (subclasses say how)."""

    def _default_env_name(self) -> str:
        name = (self.toolname or self.name).upper().replace("-", "_")
        if self.subtable:
            name += "_" + self.subtable.upper().replace("-", "_")
        return name + "_FORMAT_DEFAULT"

    def get_format_string(self, format_name: str) -> str:
        """The format named ``format_name`` in the ``formats`` table (a format itself
        if it holds ``{``); ``default`` may be set by ``TOOL_FORMAT_DEFAULT``; ``help``
        lists the formats and ``get-config=NAME`` prints one, then exit."""
        if "{" in format_name:
            return format_name
        formats = self.formats
        if format_name == "help":
            print(f"\nConfigured {self.name} output formats:\n")
            for name, entry in formats.items():
                description = entry.get("description")
                print(f"  {name:<12}" + (f" {description}" if description is not None else ""))
            sys.exit(0)
        if format_name.startswith("get-config="):
            name = format_name.split("=", 1)[1]
            if name not in formats:
                raise ValueError(f"--format: No such format {name}")
            entry = formats[name]
            print(f"[{self.subtable}.formats.{name}]" if self.subtable else f"[formats.{name}]")
            if "description" in entry:
                print(f'description = "{entry["description"]}"')
            print(f'format = "{entry["format"]}"')
            sys.exit(0)
        if format_name == "default":
            override = os.environ.get(self._default_env_name())
            if override is not None and "{" in override:
                return override
            format_name = override or format_name
        try:
            text: str = formats[format_name]["format"]
        except KeyError:
            braced = re.sub(r"\w+", r"{\g<0>}", format_name)
            raise ValueError(
                f"--format: No such format {format_name} (Did you mean '{braced}'?)"
            ) from None
        return text

    def __getattr__(self, attr: str) -> Any:
        if attr in ("dict", "config"):
            raise AttributeError(attr)
        try:
            return self.config[attr]
        except KeyError:
            raise AttributeError(attr) from None
