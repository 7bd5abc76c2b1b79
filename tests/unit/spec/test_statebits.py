"""The plain numbers clients use are the state machine's own."""

from __future__ import annotations

from pflux.spec import statebits, states
from pflux.spec.states import State


def test_the_bits_and_names_are_the_states() -> None:
    real = [state for state in State if state.name in statebits.NAMES.values()]
    assert {int(state): state.name for state in real} == statebits.NAMES
    assert {int(state): letter for state, letter in states.SHORT.items()} == statebits.LETTERS
    for name in ("PENDING", "RUNNING", "ACTIVE"):
        assert getattr(statebits, name) == State[name]


def test_the_urgencies_and_flags_are_the_states_module_s() -> None:
    for name in ("URGENCY_MIN", "URGENCY_DEFAULT", "URGENCY_MAX", "URGENCY_HOLD"):
        assert getattr(statebits, name) == getattr(states, name)
    assert (statebits.URGENCY_EXPEDITE, statebits.FLAG_DEBUG, statebits.FLAG_WAITABLE) == (
        states.URGENCY_EXPEDITE,
        states.FLAG_DEBUG,
        states.FLAG_WAITABLE,
    )
