"""``pflux job last``'s history: Python's slicing over each user's jobs, most recent first."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.errors import RPCError
from pflux.manager.history import SLICE_ERROR, History, parse_slice

part = st.none() | st.integers(-12, 12)


@given(part, part, part.filter(lambda step: step != 0), st.integers(0, 10))
def test_a_slice_selects_as_python_does(
    start: int | None, stop: int | None, step: int | None, count: int
) -> None:
    text = f"[{'' if start is None else start}:{'' if stop is None else stop}"
    text += "]" if step is None else f":{step}]"
    history = History()
    history.rebuild(lambda: ((7, jobid) for jobid in range(count)))
    assert history.get(7, text) == list(range(count))[::-1][start:stop:step]


@given(st.text(max_size=12))
def test_any_text_parses_or_is_refused_with_one_message(text: str) -> None:
    try:
        selected = parse_slice(text)
    except RPCError as exc:
        refused: RPCError | None = exc
    else:
        refused = None
        assert isinstance(selected, slice)
    assert refused is None or refused.errstr == SLICE_ERROR


@pytest.mark.parametrize("text", ["", "3", "[3]", ":1", "[::0]", "[a:]", "[1:2:3:4]", "[ :1]"])
def test_bad_slices(text: str) -> None:
    with pytest.raises(RPCError, match=SLICE_ERROR):
        parse_slice(text)


def test_users_and_late_arrivals() -> None:
    history = History()
    history.rebuild(lambda: [(1, 5), (2, 6), (1, 3)])
    history.add(1, 9)
    history.add(1, 4)  # submitted in an earlier batch than 9, accepted later
    assert history.get(1, "[:]") == [5, 3]  # before it was built: from the tables alone
    history.add(1, 9)
    history.add(1, 4)
    assert history.get(1, "[:]") == [9, 5, 4, 3]
    assert history.get(2, "[:1]") == [6]
    assert history.get(3, "[:1]") == []


def test_a_restart_builds_it_from_the_tables_when_first_asked() -> None:
    """Not at the restart: the tables then say what was added and removed meanwhile."""
    table = {5: 1, 6: 2, 3: 1}  # job id -> userid
    asked = []

    def known() -> list[tuple[int, int]]:
        asked.append(True)
        return [(userid, jobid) for jobid, userid in table.items()]

    history = History()
    history.rebuild(known)
    table[9] = 1
    history.add(1, 9)
    del table[6]
    history.remove(2, 6)
    assert not asked
    assert history.get(1, "[:]") == [9, 5, 3]
    assert history.get(2, "[:]") == []
    history.remove(1, 5)
    assert history.get(1, "[:]") == [9, 3]
    assert asked == [True]
