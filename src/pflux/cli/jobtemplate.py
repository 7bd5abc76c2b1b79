"""Jobs that differ only in text the jobspec holds whole, built once: the copies of
``submit --cc`` with ``{cc}`` in the command, the job's name, its directory or its
output paths, and the jobs of ``bulksubmit`` whose inputs fill only those.

``Templates`` builds the first such job with a marker for each of those strings,
finds where in the jobspec the markers landed, and makes every job of the same
shape by putting its own strings there: what ``job_request`` builds, without
running it again. It checks that this holds before relying on it: the template
is built twice, with two sets of markers, and used only if the second jobspec is
the first with its markers swapped, each marker a whole string (copied, nothing
computed from it). A job whose strings could be read differently (``none`` or
``kvs`` as an output path, ``--`` leading the command, text that is not valid
Unicode, an empty string), or whose other options differ from the template's,
is built in full, as is every job where the template does not hold.
"""

from __future__ import annotations

import operator

from pflux.cli import options
from pflux.errors import PfluxError
from pflux.spec.jobspec.walker import is_text

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from pflux.cli.jobopts import JobRequest, Requests

    Where = tuple[Any, ...]  # keys and indexes from the jobspec's top

#: the options whose text goes into the jobspec whole (``command`` a string each word)
WHOLE = ("command", "job_name", "cwd", "output", "error")
#: options that go into no jobspec (where the client writes), free to differ
CLIENT_SIDE = frozenset({"log", "log_stderr"})
_NOT_A_FILE = frozenset({"none", "kvs"})  # output paths that keep a stream in the KVS
_MARKERS = ("\x01pflux-template-a{}\x01", "\x01pflux-template-bb{}\x01")


class Templates:
    """``build`` (``jobopts.Requests``) for many jobs, each one that fits the template
    made from it rather than built. The template is made at the second job that
    could have one (one job alone is built, as ever), and only once."""

    def __init__(self, build: Requests) -> None:
        self.build = build
        self._template: _Template | None = None
        self._candidates = 0  # jobs seen that could have a template

    def __call__(self, args: options.Args) -> JobRequest:
        """``args``' request, as ``build(args)`` makes it."""
        texts = _whole_texts(args)
        if texts is not None:
            self._candidates += 1
            if self._candidates == 2:
                self._template = _Template.of(args, texts, self.build)
            template = self._template
            if template is not None and template.fits(args):
                return template.request(texts)
        return self.build(args)


class _Template:
    """A request built with markers for its whole texts, and where they are."""

    def __init__(
        self,
        base: dict[str, Any],
        shape: tuple[Any, ...],
        request: JobRequest,
        places: list[tuple[Where, int]],
    ) -> None:
        self._others = operator.itemgetter(*base)  # the other options, which a job must share
        self._values = self._others(base)
        self.shape = shape
        self.request_ = request
        self.places = _trie(places)

    @classmethod
    def of(cls, args: options.Args, texts: Sequence[str], build: Requests) -> _Template | None:
        """The template of jobs shaped as ``args``, or None where it would not hold."""
        if args.dependencies:  # built per job: 'after' warns once a job
            return None
        try:
            first, second = (build(_marked(args, marker, len(texts))) for marker in _MARKERS)
        except PfluxError:
            return None  # the job, built in full, says what is wrong
        places = _places(first.jobspec, [_MARKERS[0].format(i) for i in range(len(texts))])
        if places is None or first[1:] != second[1:]:  # urgency, flags: the same
            return None
        swapped = [_MARKERS[1].format(i) for i in range(len(texts))]
        if _filled(first.jobspec, _trie(places), swapped) != second.jobspec:
            return None
        base = {k: v for k, v in vars(args).items() if k not in WHOLE and k not in CLIENT_SIDE}
        return cls(base, _shape(args), first, places)

    def fits(self, args: options.Args) -> bool:
        """Whether ``args`` is this template's job with other whole texts."""
        return _shape(args) == self.shape and self._others(vars(args)) == self._values

    def request(self, texts: Sequence[str]) -> JobRequest:
        """The request of the job whose whole texts are ``texts``."""
        return self.request_._replace(jobspec=_filled(self.request_.jobspec, self.places, texts))


def _whole_texts(args: options.Args) -> list[str] | None:
    """``args``' whole texts in order, or None if one could be read other than whole."""
    command = args.command
    texts = list(command)
    if not texts or texts[0] == "--":
        return None
    for key in WHOLE[1:]:
        value = getattr(args, key)
        if value is not None:
            if key in ("output", "error") and value in _NOT_A_FILE:
                return None
            texts.append(value)
    if all(text and is_text(text) for text in texts):
        return texts
    return None


def _shape(args: options.Args) -> tuple[Any, ...]:
    return (len(args.command), *(getattr(args, key) is None for key in WHOLE[1:]))


def _marked(args: options.Args, marker: str, count: int) -> options.Args:
    """``args`` with its whole texts (``count`` of them) the markers numbered in order."""
    values = vars(args).copy()
    numbers = iter(range(count))
    values["command"] = [marker.format(next(numbers)) for _ in args.command]
    for key in WHOLE[1:]:
        if values[key] is not None:
            values[key] = marker.format(next(numbers))
    return options.Args(**values)


def _places(jobspec: Any, markers: list[str]) -> list[tuple[Where, int]] | None:
    """Where each marker is in ``jobspec`` (a marker may be in several places, or none),
    or None if one is part of a longer string or of a key."""
    index = {marker: i for i, marker in enumerate(markers)}
    found: list[tuple[Where, int]] = []
    stack: list[tuple[Any, Where]] = [(jobspec, ())]
    while stack:
        node, path = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if isinstance(key, str) and _holds_marker(key):
                    return None
                stack.append((value, (*path, key)))
        elif isinstance(node, list):
            stack.extend((value, (*path, i)) for i, value in enumerate(node))
        elif isinstance(node, str):
            if node in index:
                found.append((path, index[node]))
            elif _holds_marker(node):
                return None
    return found


def _holds_marker(text: str) -> bool:
    return "\x01pflux-template-" in text


def _trie(places: list[tuple[Where, int]]) -> dict[Any, Any]:
    """``places`` as a tree: each key to the tree below it, or to the text it holds."""
    root: dict[Any, Any] = {}
    for where, which in places:
        node = root
        for key in where[:-1]:
            node = node.setdefault(key, {})
        node[where[-1]] = which
    return root


def _filled(node: Any, trie: dict[Any, Any], texts: Sequence[str]) -> Any:
    """``node`` with each place of ``trie`` holding its text: the containers on the way
    copied (each once), the rest shared (a jobspec is not changed once built)."""
    copy = node.copy()
    for key, below in trie.items():
        copy[key] = texts[below] if type(below) is int else _filled(node[key], below, texts)
    return copy
