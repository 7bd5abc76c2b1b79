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

from pflux.spec.idset import IdSet

__all__ = ["pty_ranks"]


def pty_ranks(option: object, ntasks: int) -> tuple[int, ...]:
    """The task ranks (of ``ntasks``) the ``pty`` option gives a pty; () for none.

    The option was checked at ingest (``pflux.spec.shell_options``): it is
    only read here.
    """
    if option is None or option is False or option == 0:
        return ()
    if not isinstance(option, Mapping):  # true, or 1
        return tuple(range(ntasks))
    interactive = option.get("interactive", False)
    ranks = option.get("ranks", "0" if interactive else "all")
    if ranks == "all":
        named: tuple[int, ...] = tuple(range(ntasks))
    elif isinstance(ranks, int):
        named = (ranks,)
    else:
        named = tuple(IdSet.decode(ranks))
    chosen = {rank for rank in named if rank < ntasks}
    if interactive and ntasks:
        chosen.add(0)  # task 0 always, as flux-core
    return tuple(sorted(chosen))
