"""``pflux bulksubmit``'s inputs and templates, as ``flux bulksubmit`` reads them.

The command line is a template followed by input lists, each opened by a
separator (GNU parallel's): ``:::`` (the arguments that follow), ``::::``
(the lines of a file, ``-`` for stdin), ``:::+``/``::::+`` (the same, linked:
one item per combination, cycled, instead of one combination per item). The
job list is the product of the lists, links put in at their place. Each job's
command and options are the template passed through ``str.format`` with the
inputs as positional fields (``{}``, ``{0}``, ``{1.%}``) and ``seq``, ``seq1``
and ``cc`` as named ones; ``{{mustache}}`` templates are kept for the shell.
No I/O here but reading the files ``::::`` names.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import IO, Any, Final, NamedTuple

from pflux.errors import SpecError

__all__ = [
    "LIST_SENTINEL",
    "OPTION_PREFIXES",
    "Linked",
    "Method",
    "combine",
    "expand",
    "expand_option",
    "methods",
    "split_inputs",
    "split_text",
]

SEPARATORS: Final = (":::", ":::+", "::::", "::::+")
LIST_SENTINEL: Final = "::list::"  # joins a --define method's list result until it is split
_OPEN, _CLOSE = "\x00stache\x00", "\x00/stache\x00"

# the options whose values are templates (flux's "mutable" options), in the order a
# dry run prints them, with how it prints them: argparse dest -> prefix
OPTION_PREFIXES: Final = {
    "queue": "-q",
    "bank": "-B",
    "ntasks": "-n",
    "nodes": "-N",
    "cores_per_task": "-c",
    "gpus_per_task": "-g",
    "cores": "--cores=",
    "tasks_per_node": "--tasks-per-node=",
    "tasks_per_core": "--tasks-per-core=",
    "gpus_per_node": "--gpus-per-node=",
    "time_limit": "-t",
    "env": "--env=",
    "urgency": "--urgency=",
    "setopt": "-o ",
    "setattr": "--setattr=",
    "job_name": "--job-name=",
    "input": "--input=",
    "output": "--output=",
    "error": "--error=",
    "cc": "--cc=",
    "bcc": "--bcc=",
    "log": "--log=",
    "log_stderr": "--log-stderr=",
    "dependencies": "--dependency=",
    "taskmap": "--taskmap=",
    "requires": "--requires=",
    "cwd": "--cwd=",
    "flags": "--flags=",
    "signal": "--signal=",
}

Method = Callable[[str], Any]


class Linked(NamedTuple):
    """An input list linked in at place ``at`` among the lists."""

    at: int
    items: list[str]


def split_text(text: str, sep: str | None) -> list[str]:
    """``text`` cut at ``sep`` (whitespace if None), empty items dropped."""
    return [item for item in text.split(sep) if item]


def split_inputs(
    argv: Sequence[str], sep: str | None, stdin: IO[str]
) -> tuple[list[str], list[list[str]], list[Linked]]:
    """The template, the input lists and the linked lists of a command line."""
    template: list[str] = []
    groups: list[tuple[str, list[str]]] = []
    for arg in argv:
        if arg.startswith(":::"):
            if arg not in SEPARATORS:
                expected = ", ".join(SEPARATORS)
                raise SpecError(f"unknown input separator {arg!r} (expected {expected})")
            groups.append((arg, []))
        elif groups:
            groups[-1][1].append(arg)
        else:
            template.append(arg)
    lists: list[list[str]] = []
    links: list[Linked] = []
    for index, (separator, given) in enumerate(groups):
        items = _read_file(separator, given, sep, stdin) if separator.startswith("::::") else given
        if separator.endswith("+"):
            if not items:
                raise SpecError(f"{separator}: a linked input list must not be empty")
            links.append(Linked(index, items))
        else:
            lists.append(items)
    return template, lists, links


def _read_file(separator: str, items: list[str], sep: str | None, stdin: IO[str]) -> list[str]:
    if len(items) != 1:
        raise SpecError(f"{separator} takes one file name, got {len(items)}")
    if items[0] == "-":
        return split_text(stdin.read(), sep)
    try:
        with open(items[0], encoding="utf-8") as file:
            return split_text(file.read(), sep)
    except OSError as exc:
        raise SpecError(f"{separator} {items[0]}: {exc.strerror or exc}") from None


def combine(lists: Sequence[Sequence[str]], links: Iterable[Linked]) -> list[list[str]]:
    """Every combination of one item per list, each linked list's next item put in at its place."""
    combos = [list(combo) for combo in itertools.product(*lists)]
    for link in links:
        cycle = itertools.cycle(link.items)
        for combo in combos:
            combo.insert(link.at, next(cycle))
    return combos


def methods(defines: Iterable[str]) -> dict[str, Method]:
    """``--define=NAME=CODE``: NAME's method evaluates the Python expression CODE with the
    input as ``x`` (flux's rule: the user's own code, run as they typed it)."""
    found: dict[str, Method] = {}
    for text in defines:
        name, equals, code = text.partition("=")
        if not equals or not name.isidentifier() or not code:
            raise SpecError(f"--define={text}: must be NAME=CODE, NAME an identifier")
        try:
            compiled = compile(code, f"--define={name}", "eval")
        except SyntaxError as exc:
            raise SpecError(f"--define={text}: {exc.msg}") from None
        found[name] = _method(name, compiled)
    return found


def _method(name: str, compiled: Any) -> Method:
    def call(x: str) -> Any:
        try:
            return eval(compiled, {}, {"x": x})  # the user's --define, by design
        except Exception as exc:  # any error of the user's code, reported as theirs
            raise ValueError(f"--define={name} on {x!r}: {type(exc).__name__}: {exc}") from None

    return call


class _Input:
    """One input as a format field: ``{0}`` is the text, ``{0.%}`` and the rest transform it."""

    __slots__ = ("methods", "text")

    def __init__(self, text: str, found: Mapping[str, Method]) -> None:
        self.text = text
        self.methods = found

    def __str__(self) -> str:
        return self.text

    def __format__(self, spec: str) -> str:
        return format(self.text, spec)

    def __getattr__(self, name: str) -> Any:
        if name == "%":
            return os.path.splitext(self.text)[0]
        if name == "/":
            return os.path.basename(self.text)
        if name == "//":
            return os.path.dirname(self.text)
        if name == "/%":
            return os.path.basename(os.path.splitext(self.text)[0])
        if name in self.methods:
            result = self.methods[name](self.text)
            if isinstance(result, list):
                return LIST_SENTINEL.join(str(item) for item in result)
            return result
        raise ValueError(f"Unknown input string method '.{name}'")


def _format(text: str, inputs: Sequence[_Input], named: Mapping[str, Any]) -> str:
    kept = text.replace("{{", _OPEN).replace("}}", _CLOSE)
    return kept.format(*inputs, **named).replace(_OPEN, "{{").replace(_CLOSE, "}}")


def expand(
    template: Sequence[str],
    combo: Sequence[str],
    found: Mapping[str, Method],
    named: Mapping[str, Any],
) -> list[str]:
    """The command of one job: each template argument formatted (a method's list: many)."""
    inputs = [_Input(text, found) for text in combo]
    command: list[str] = []
    for arg in template:
        try:
            command.extend(_format(arg, inputs, named).split(LIST_SENTINEL))
        except (IndexError, KeyError):
            raise SpecError(f"Invalid replacement string in command: '{arg}'") from None
        except ValueError as exc:
            raise SpecError(f"Invalid replacement string in command: '{arg}': {exc}") from None
    return command


def expand_option(
    dest: str,
    value: str,
    combo: Sequence[str],
    found: Mapping[str, Method],
    named: Mapping[str, Any],
) -> str:
    """One option value of one job, formatted as the command is."""
    inputs = [_Input(text, found) for text in combo]
    where = f"{OPTION_PREFIXES[dest].strip()}: '{value}'"
    try:
        result = _format(value, inputs, named)
    except IndexError:
        raise SpecError(f"Invalid replacement index in {where}") from None
    except KeyError as exc:
        raise SpecError(f"Replacement key {exc} not found in {where}") from None
    except ValueError as exc:
        raise SpecError(f"Invalid replacement string in {where}: {exc}") from None
    if LIST_SENTINEL in result:
        raise SpecError(f"Invalid replacement string in {where}: a list fits only the command")
    return result
