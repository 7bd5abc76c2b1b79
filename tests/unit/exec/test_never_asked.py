"""When a restart may take another rank's shell as one that never began: only on the word of
the exec-node that was there when job-exec journalled asking for it."""

from __future__ import annotations

from pflux.exec.host import RankShells
from pflux.exec.leftovers import Leftover
from pflux.exec.takeover import _never_asked

JOB = 1 << 24
KEY = JOB | 1 << 64  # its shell on rank 1


def said(incarnation: int, unasked: set[int]) -> RankShells:
    return RankShells(set(), {}, incarnation, unasked)


def test_the_same_exec_node_never_asked_means_the_shell_never_began() -> None:
    assert _never_asked(said(77, {JOB}), JOB, Leftover(KEY, asked=77))


def test_anything_else_may_have_run() -> None:
    assert not _never_asked(said(77, set()), JOB, Leftover(KEY, asked=77))  # it was asked
    assert not _never_asked(said(78, {JOB}), JOB, Leftover(KEY, asked=77))  # restarted since
    assert not _never_asked(said(77, {JOB}), JOB, Leftover(KEY, asked=0))  # not known then
    assert not _never_asked(said(77, {JOB}), JOB, Leftover(KEY))  # not journalled
