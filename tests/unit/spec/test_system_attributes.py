"""``system_attributes``: the one read of a jobspec's ``attributes.system``, safe on a jobspec
read back unchecked (a restart's), so no service trips over a damaged one."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pflux.manager.queues import Queues
from pflux.spec.builder import from_command
from pflux.spec.jobspec import system_attributes

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=10,
)


@given(json_values)
def test_any_json_reads_as_a_mapping(value: Any) -> None:
    system = system_attributes(value)
    assert dict(system) == (
        value["attributes"]["system"]
        if isinstance(value, dict)
        and isinstance(value.get("attributes"), dict)
        and isinstance(value["attributes"].get("system"), dict)
        else {}
    )


@given(st.sampled_from([None, [], "x", 3]), st.sampled_from(["attributes", "system"]))
def test_a_damaged_level_is_no_attributes(bad: Any, level: str) -> None:
    jobspec = {"attributes": bad} if level == "attributes" else {"attributes": {"system": bad}}
    assert system_attributes(jobspec) == {}
    queues = Queues(["batch"])  # the job manager's reads of the queue name go through it
    assert queues.started(jobspec) is False
    assert queues.submit_error(jobspec) == "a named queue is required"


def test_a_jobspecs_own_is_returned_as_it_is() -> None:
    jobspec = from_command(["true"])
    assert system_attributes(jobspec) is jobspec["attributes"]["system"]
