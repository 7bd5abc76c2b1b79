"""The ``pty`` shell option: which task ranks run on a pseudo-terminal (its refusals are
``pflux.spec.shell_options``'s, tested there)."""

from __future__ import annotations

import marshal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.exec.plan import plan
from pflux.exec.terminal import pty_ranks
from pflux.protocol.shellwire import Description
from pflux.spec.builder import from_command
from pflux.spec.idset import IdSet
from pflux.spec.resource import ResourceSet


@pytest.mark.parametrize("option", [True, 1])
def test_a_true_option_puts_every_task_on_a_pty(option: object) -> None:
    assert pty_ranks(option, 3) == (0, 1, 2)


@pytest.mark.parametrize("option", [None, False, 0])
def test_no_option_or_a_false_one_puts_no_task_on_a_pty(option: object) -> None:
    assert pty_ranks(option, 3) == ()


@given(st.sets(st.integers(0, 40), min_size=1), st.integers(0, 30))
def test_ranks_name_the_tasks_that_exist(ranks: set[int], ntasks: int) -> None:
    text = IdSet(ranks).encode()
    assert pty_ranks({"ranks": text}, ntasks) == tuple(r for r in sorted(ranks) if r < ntasks)
    one = min(ranks)
    assert pty_ranks({"ranks": one, "capture": 1}, ntasks) == ((one,) if one < ntasks else ())
    assert pty_ranks({"ranks": "all"}, ntasks) == tuple(range(ntasks))


def test_interactive_puts_task_0_on_a_pty_and_those_ranks_names() -> None:
    assert pty_ranks({"interactive": True}, 3) == (0,)
    assert pty_ranks({"interactive": 1, "ranks": "2"}, 3) == (0, 2)
    assert pty_ranks({"interactive": 1, "ranks": "all"}, 2) == (0, 1)


def test_the_plan_gives_the_shell_the_ranks() -> None:
    R = ResourceSet.build({0: (IdSet.decode("0-1"), IdSet())}, "h").to_json()  # noqa: N806
    jobspec = from_command(["true"], num_tasks=2)
    jobspec["attributes"]["system"]["shell"] = {"options": {"pty": {"ranks": "1"}}}
    options = {"uri": "u", "namespace": "n", "tmp_parents": ("/tmp",), "hostname": "h"}
    planned = plan(1, jobspec, R, cpus=(0, 1), **options)
    assert planned.ptys == (1,)
    assert Description(*marshal.loads(planned.shells[0][1])).ptys == (1,)
