"""The ``pty`` shell option: which tasks run on a pseudo-terminal, as flux-core's shell.

``-o pty`` (any true value) gives every task a pty; as a mapping it takes
``ranks`` (an idset, ``all`` or one rank: the tasks that get one),
``capture`` (the pty's output goes where the task's stdout goes: always, in
pflux, whose clients read a pty's output there) and ``interactive`` (task 0
gets a pty, the only one unless ``ranks`` names others, and ``pflux run``
makes its own terminal that pty's: raw, and its size followed, see
``pflux.cli.attach_terminal``). A task on a pty has it as stdin, stdout and stderr and as its
controlling terminal, in a session of its own; what it writes is the rank's
``stdout`` (there is no separate stderr), carriage returns and all, and the
job's input is written to the pty as a terminal's keyboard would (its end is
the terminal's end-of-file character). job-exec reads the option here; the
shell only gets the ranks.
"""

from __future__ import annotations

from collections.abc import Mapping

from pflux.errors import IdsetError, JobspecError
from pflux.spec.idset import IdSet

__all__ = ["pty_ranks"]

_OPTION = "attributes.system.shell.options.pty"
_KEYS = ("ranks", "capture", "interactive")


def _fail(key: str, message: str) -> JobspecError:
    return JobspecError([(f"{_OPTION}.{key}" if key else _OPTION, message)])


def pty_ranks(option: object, ntasks: int) -> tuple[int, ...]:
    """The task ranks (of ``ntasks``) the ``pty`` option gives a pty; () for none."""
    if option is None or option is False or option == 0:
        return ()
    if option is True or option == 1:
        return tuple(range(ntasks))
    if not isinstance(option, Mapping):
        raise _fail("", f"must be true or a mapping, not {option!r}")
    _check_flags(option)
    if not option.get("interactive", False):
        return _ranks(option.get("ranks", "all"), ntasks)
    ranks = set(_ranks(option.get("ranks", "0"), ntasks))  # task 0 always, as flux-core
    return tuple(sorted(ranks | ({0} if ntasks else set())))


def _check_flags(option: Mapping[object, object]) -> None:
    for key in option:
        if key not in _KEYS:
            raise _fail(str(key), "unknown key (expected ranks, capture or interactive)")
    for key in ("capture", "interactive"):
        value = option.get(key, key == "capture")
        if not isinstance(value, (bool, int)):
            raise _fail(key, f"must be a boolean or an integer, not {value!r}")
    if not option.get("capture", True):
        raise _fail("capture", "must be true: a pty's output is kept only by capturing it")


def _ranks(ranks: object, ntasks: int) -> tuple[int, ...]:
    if isinstance(ranks, int) and not isinstance(ranks, bool) and ranks >= 0:
        return (ranks,) if ranks < ntasks else ()
    if ranks == "all":
        return tuple(range(ntasks))
    if not isinstance(ranks, str):
        raise _fail("ranks", f'must be an idset or "all", not {ranks!r}')
    try:
        named = IdSet.decode(ranks)
    except IdsetError as exc:
        raise _fail("ranks", str(exc)) from None
    return tuple(rank for rank in named if rank < ntasks)
