"""A command's options, declared once: parsed here when argparse would agree, else by argparse.

Importing argparse loads ``re`` (and enum, gettext...): about a third of a short
command's instructions. So the common commands (``run``, ``submit``, ``jobs``...)
declare their options to an ``OptionParser`` that records argparse's calls
(``add_argument``, ``add_argument_group``, ``add_mutually_exclusive_group``,
``set_defaults``) and parses the well-formed common case itself: exact long
options, ``--opt=value``, short options and their clusters (``-xn4``), a
trailing ``nargs="*"`` or ``REMAINDER`` positional; actions store, store_const,
store_true/false, append, count and ``OptionAction`` subclasses; ``type`` and
``choices``. Anything else (help, an abbreviation, ``--``, a value that starts
with ``-``, a bad value or a missing one, an unknown option) hands the whole
command line over to argparse, built by replaying the recorded calls, so help,
usage and every error are argparse's own. tests/cli/test_lean_options.py checks
over generated command lines that both give the same namespace.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence
    from typing import Any, NoReturn

__all__ = ["REMAINDER", "SUPPRESS", "Args", "OptionAction", "OptionParser"]

#: argparse's own values, so that declarations read the same to both
SUPPRESS = "==SUPPRESS=="
REMAINDER = "..."
_FLAG_ACTIONS = {"store_true": False, "store_false": True, "store_const": None, "count": None}


class Args:
    """The parsed options, as attributes (argparse's Namespace, without argparse)."""

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Args) and vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]

    def __contains__(self, key: str) -> bool:
        return key in self.__dict__

    def __repr__(self) -> str:
        values = ", ".join(f"{name}={value!r}" for name, value in vars(self).items())
        return f"Args({values})"

    if TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any: ...
        def __setattr__(self, name: str, value: Any) -> None: ...


class OptionAction:
    """A custom action, as an ``argparse.Action`` subclass would be: it defines
    ``__call__``; argparse gets a subclass of its own Action with that ``__call__``."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str,
        *,
        nargs: Any = None,
        const: Any = None,
        default: Any = None,
        type: Callable[[str], Any] | None = None,
        choices: Any = None,
        required: bool = False,
        help: str | None = None,
        metavar: Any = None,
    ) -> None:
        self.option_strings = list(option_strings)
        self.dest = dest
        self.nargs = nargs
        self.const = const
        self.default = default
        self.type = type
        self.choices = choices
        self.required = required
        self.help = help
        self.metavar = metavar

    def __call__(
        self, parser: Any, namespace: Args, values: Any, option_string: str | None = None
    ) -> None:
        raise NotImplementedError


class _HandOver(Exception):
    """The command line is one argparse must parse (help, an error, a rarer form)."""


class _Declared:
    """One ``add_argument`` call, normalised as argparse does."""

    __slots__ = (
        "action",
        "choices",
        "const",
        "default",
        "dest",
        "group",
        "nargs",
        "required",
        "strings",
        "type",
    )

    def __init__(self, names: tuple[str, ...], kwargs: dict[str, Any], group: int) -> None:
        self.strings: tuple[str, ...] = names if names[0].startswith("-") else ()
        self.group = group  # the mutually exclusive group, or -1
        if self.strings:
            longs = [name for name in names if name.startswith("--")]
            default_dest = (longs or list(names))[0].lstrip("-").replace("-", "_")
            self.dest: str = kwargs.get("dest", default_dest)
        else:
            self.dest = names[0]
        self.action = kwargs.get("action", "store")
        self.nargs = kwargs.get("nargs")
        self.const = kwargs.get("const")
        self.type: Callable[[str], Any] | None = kwargs.get("type")
        self.choices = kwargs.get("choices")
        self.required = bool(kwargs.get("required", False))
        flag_default = _FLAG_ACTIONS.get(self.action) if isinstance(self.action, str) else None
        if self.action == "store_true":
            self.const = True
        elif self.action == "store_false":
            self.const = False
        self.default = kwargs.get("default", flag_default)

    def lean(self) -> bool:
        """Whether the lean parser knows this declaration (else seeing it hands over)."""
        if not self.strings:
            return self.nargs in ("*", REMAINDER) and self.choices is None
        if isinstance(self.action, type):
            return issubclass(self.action, OptionAction) and self.nargs is None
        if self.action in _FLAG_ACTIONS:
            return self.nargs is None
        if self.action == "store":
            return self.nargs in (None, "?")
        return self.action == "append" and self.nargs is None

    def takes_value(self) -> bool:
        return not (isinstance(self.action, str) and self.action in _FLAG_ACTIONS)

    def convert(self, text: Any) -> Any:
        """``text`` through ``type`` and checked against ``choices``; hands over if bad."""
        value: Any = text
        if self.type is not None:
            try:
                value = self.type(text)
            except Exception as exc:
                raise _HandOver from exc
        if self.choices is not None and value not in self.choices:
            raise _HandOver
        return value


class _Group:
    """An argument group or a mutually exclusive group of an ``OptionParser``."""

    def __init__(self, parser: OptionParser, index: int, exclusive: bool) -> None:
        self._parser = parser
        self._index = index
        self._exclusive = exclusive

    def add_argument(self, *names: str, **kwargs: Any) -> None:
        self._parser._record("add_argument", self._index, names, kwargs, self._exclusive)

    def add_argument_group(self, *args: Any, **kwargs: Any) -> _Group:
        return self._parser._group("add_argument_group", self._index, args, kwargs)

    def add_mutually_exclusive_group(self, **kwargs: Any) -> _Group:
        return self._parser._group("add_mutually_exclusive_group", self._index, (), kwargs)

    def set_defaults(self, **kwargs: Any) -> None:
        self._parser.set_defaults(**kwargs)


class OptionParser:
    """Records argparse's declarations; parses the common case, else hands over."""

    def __init__(self, prog: str, description: str | None = None, usage: str | None = None):
        self.prog = prog
        self.description = description
        self.usage = usage
        self.allow_abbrev = True
        self._calls: list[tuple[str, int, tuple[Any, ...], dict[str, Any]]] = []
        self._declared: list[_Declared] = []
        self._defaults: dict[str, Any] = {}
        self._groups = 0

    # ------------------------------------------------------------ recording

    def add_argument(self, *names: str, **kwargs: Any) -> None:
        self._record("add_argument", -1, names, kwargs, False)

    def add_argument_group(self, *args: Any, **kwargs: Any) -> _Group:
        return self._group("add_argument_group", -1, args, kwargs)

    def add_mutually_exclusive_group(self, **kwargs: Any) -> _Group:
        return self._group("add_mutually_exclusive_group", -1, (), kwargs)

    def set_defaults(self, **kwargs: Any) -> None:
        self._calls.append(("set_defaults", -1, (), kwargs))
        self._defaults.update(kwargs)
        for declared in self._declared:
            if declared.dest in kwargs:
                declared.default = kwargs[declared.dest]

    def _record(
        self, call: str, group: int, names: tuple[str, ...], kwargs: dict[str, Any], mutex: bool
    ) -> None:
        self._calls.append((call, group, names, kwargs))
        declared = _Declared(names, kwargs, group if mutex else -1)
        if "default" not in kwargs and declared.dest in self._defaults:
            declared.default = self._defaults[declared.dest]
        self._declared.append(declared)

    def _group(
        self, call: str, parent: int, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> _Group:
        self._calls.append((call, parent, args, kwargs))
        self._groups += 1
        return _Group(self, self._groups - 1, call == "add_mutually_exclusive_group")

    # ------------------------------------------------------------ argparse

    def argparse(self) -> argparse.ArgumentParser:
        """argparse's parser of these declarations: help, usage and errors."""
        from pflux.cli.argparser import parser

        real = parser(self.prog, self.description)
        real.usage = self.usage
        real.allow_abbrev = self.allow_abbrev
        groups: list[Any] = []
        for call, group, args, declared in self._calls:
            target = real if group < 0 else groups[group]
            kwargs = declared
            if call == "add_argument":
                action = kwargs.get("action")
                if isinstance(action, type) and issubclass(action, OptionAction):
                    kwargs = {**kwargs, "action": argparse_action(action)}
                target.add_argument(*args, **kwargs)
            elif call == "set_defaults":
                target.set_defaults(**kwargs)
            else:
                groups.append(getattr(target, call)(*args, **kwargs))
        return real

    def error(self, message: str) -> NoReturn:
        """Print the usage and ``message`` as argparse does, and exit 2."""
        self.argparse().error(message)

    def print_help(self) -> None:
        self.argparse().print_help()

    # ------------------------------------------------------------ parsing

    def parse_args(self, argv: Sequence[str], namespace: Args | None = None) -> Args:
        """The options of ``argv``; argparse's exit on help or an error."""
        if namespace is None:
            try:
                return self.parse_lean(argv)
            except _HandOver:
                pass
        parsed: Args = self.argparse().parse_args(
            list(argv), namespace=Args() if namespace is None else namespace
        )
        return parsed

    def parse_lean(self, argv: Sequence[str]) -> Args:
        """The options of ``argv`` as argparse would give them; ``_HandOver`` if this
        command line is not one the lean parser knows argparse's answer for."""
        return _Scan(self, argv).namespace


class _Scan:
    """One lean parse of a command line."""

    def __init__(self, parser: OptionParser, argv: Sequence[str]) -> None:
        self.parser = parser
        self.argv = argv
        self.options: dict[str, _Declared] = {}
        positionals = [item for item in parser._declared if not item.strings]
        for item in parser._declared:
            for string in item.strings:
                simple = string.startswith("--") or len(string) == 2
                if "=" in string or string in ("-", "--") or not simple:
                    raise _HandOver
                if item.lean():
                    self.options[string] = item
        if len(positionals) > 1 or (positionals and not positionals[0].lean()):
            raise _HandOver
        self.positional = positionals[0] if positionals else None
        self.taken: list[str] | None = None  # the positional's arguments
        self.seen: list[_Declared] = []
        self.namespace = Args()
        self.values = self.namespace.__dict__
        for item in parser._declared:
            if item.dest not in self.values and item.default is not SUPPRESS:
                self.values[item.dest] = item.default
        for dest, default in parser._defaults.items():
            self.values.setdefault(dest, default)
        index = 0
        while index < len(argv):
            index = self._argument(index)
        self._finish()

    def _argument(self, index: int) -> int:
        """Take the argument at ``index`` (and its value); the index of the next."""
        arg = self.argv[index]
        if arg in ("-", "--"):
            raise _HandOver
        if not arg.startswith("-"):
            return self._positional(index)
        if arg.startswith("--"):
            name, equals, text = arg.partition("=")
            return self._take(self._option(name), name, text if equals else None, index + 1)
        if "=" in arg:
            raise _HandOver
        at = 1
        while True:  # a cluster: flags, then perhaps one option with its value
            string = "-" + arg[at]
            item = self._option(string)
            rest = arg[at + 1 :]
            if item.takes_value() or not rest:
                return self._take(item, string, rest or None, index + 1)
            self._take(item, string, None, index + 1)
            at += 1

    def _option(self, string: str) -> _Declared:
        item = self.options.get(string)
        if item is None:
            raise _HandOver
        self.seen.append(item)
        return item

    def _positional(self, index: int) -> int:
        """The positional's arguments from ``index``: the rest for REMAINDER, else
        those up to the next option (argparse refuses any after that)."""
        if self.positional is None or self.taken is not None:
            raise _HandOver
        end = len(self.argv)
        if self.positional.nargs == "*":
            end = index
            while end < len(self.argv) and not self.argv[end].startswith("-"):
                end += 1
        self.taken = list(self.argv[index:end])
        return end

    def _take(self, item: _Declared, string: str, explicit: str | None, index: int) -> int:
        """Apply option ``item`` (as ``string``) with its value: ``explicit`` if attached,
        else the next argument; the index of the argument after it."""
        values = self.values
        action = item.action
        if not item.takes_value():
            if explicit is not None:
                raise _HandOver
            if action == "count":
                values[item.dest] = (values.get(item.dest) or 0) + 1
            else:
                values[item.dest] = item.const
            return index
        if explicit is None:
            following = self.argv[index] if index < len(self.argv) else None
            if following is not None and not following.startswith("-"):
                explicit, index = following, index + 1
            elif item.nargs != "?":
                raise _HandOver
        if explicit == "--":
            raise _HandOver  # argparse drops a "--" from an option's values
        if explicit is None:
            value = item.convert(item.const) if isinstance(item.const, str) else item.const
            if item.choices is not None and value not in item.choices:
                raise _HandOver
        else:
            value = item.convert(explicit)
        if action == "store":
            values[item.dest] = value
        elif action == "append":
            values[item.dest] = [*(values.get(item.dest) or ()), value]
        else:
            custom = action(
                item.strings, item.dest, const=item.const, default=item.default, type=item.type
            )
            custom(self.parser, self.namespace, value, string)
        return index

    def _finish(self) -> None:
        """The positional's value, the defaults argparse converts, and the checks."""
        values = self.values
        positional = self.positional
        if positional is not None:
            taken = self.taken or []
            if taken or positional.default is None or positional.nargs == REMAINDER:
                values[positional.dest] = [positional.convert(text) for text in taken]
            else:
                values[positional.dest] = positional.default
        for item in self.parser._declared:
            if item.strings and item not in self.seen:
                if item.required:
                    raise _HandOver
                default = item.default
                if isinstance(default, str) and values.get(item.dest) is default and item.type:
                    values[item.dest] = item.convert(default)
        groups = [item.group for item in set(self.seen) if item.group >= 0]
        if len(groups) != len(set(groups)):
            raise _HandOver


_ACTIONS: dict[type[OptionAction], type[argparse.Action]] = {}


def argparse_action(action: type[OptionAction]) -> type[argparse.Action]:
    """argparse's Action class that calls ``action``'s ``__call__``."""
    made = _ACTIONS.get(action)
    if made is None:
        import argparse

        made = type(action.__name__, (argparse.Action,), {"__call__": action.__call__})
        _ACTIONS[action] = made
    return made
