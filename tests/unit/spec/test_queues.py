"""``pflux.spec.queues``: [queues] and [policy] read as flux-core reads them, and a jobspec
given its queue's defaults and constraints as flux-core's frobnicator gives them."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.errors import ConfigError, SpecError
from pflux.spec.queues import JobPolicy, QueueConfig

CONFIG: dict[str, Any] = {
    "queues": {
        "batch": {"requires": ["batch"]},
        "debug": {
            "requires": ["debug", "fast"],
            "policy": {
                "limits": {"duration": "1h"},
                "jobspec": {"defaults": {"system": {"duration": "5m"}}},
            },
        },
        "any": {},
    },
    "policy": {
        "jobspec": {"defaults": {"system": {"queue": "batch", "duration": "10m"}}},
        "limits": {"duration": "8h"},
    },
}


def jobspec(**system: Any) -> dict[str, Any]:
    return {"version": 1, "attributes": {"system": {"duration": 0, **system}}}


def test_configuration_is_read_with_a_queues_policy_over_the_general_one() -> None:
    config = QueueConfig.from_config(CONFIG)
    assert list(config.queues) == ["batch", "debug", "any"]
    assert config.default_queue == "batch"
    assert config.policy == JobPolicy(600.0, 28800.0)
    assert config.queues["debug"].policy == JobPolicy(300.0, 3600.0)
    assert config.queues["batch"].policy == JobPolicy(600.0, 28800.0)
    assert config.queues["debug"].requires == ("debug", "fast")
    assert config.queues["any"].requires is None
    assert not QueueConfig.from_config({}).active


def test_defaults_and_requires_are_filled_in() -> None:
    config = QueueConfig.from_config(CONFIG)
    submitted = jobspec()
    frobbed = config.frob(submitted)
    assert submitted == jobspec()  # a copy is changed, not the jobspec submitted
    assert frobbed["attributes"]["system"] == {
        "duration": 600.0,
        "queue": "batch",
        "constraints": {"properties": ["batch"]},
    }
    system = config.frob(jobspec(queue="debug", duration=60.0))["attributes"]["system"]
    assert system == {
        "duration": 60.0,
        "queue": "debug",
        "constraints": {"properties": ["debug", "fast"]},
    }
    same = jobspec(queue="any", duration=5.0)
    assert config.frob(same) is same  # nothing to change


def test_requires_are_anded_with_the_jobs_constraints() -> None:
    config = QueueConfig.from_config(CONFIG)
    props = jobspec(queue="debug", constraints={"properties": ["fast", "big"]})
    assert config.frob(props)["attributes"]["system"]["constraints"] == {
        "properties": ["fast", "big", "debug"]
    }
    ranks = jobspec(queue="debug", constraints={"ranks": ["0"]})
    assert config.frob(ranks)["attributes"]["system"]["constraints"] == {
        "and": [{"ranks": ["0"]}, {"properties": ["debug", "fast"]}]
    }


def test_a_queue_not_configured_or_none_is_refused_in_flux_cores_words() -> None:
    config = QueueConfig.from_config(CONFIG)
    with pytest.raises(SpecError, match=r"^Invalid queue 'nope' specified$"):
        config.frob(jobspec(queue="nope"))
    no_default = copy.deepcopy(CONFIG)
    del no_default["policy"]["jobspec"]["defaults"]["system"]["queue"]
    with pytest.raises(SpecError, match=r"^no queue specified$"):
        QueueConfig.from_config(no_default).frob(jobspec())
    # with no queue configured, the job manager refuses the name ('x' is not a valid queue)
    anonymous = QueueConfig.from_config({"policy": {"limits": {"duration": "1h"}}})
    assert anonymous.frob(jobspec(queue="x")) == jobspec(queue="x")


def test_a_duration_over_the_limit_is_refused() -> None:
    config = QueueConfig.from_config(CONFIG)
    config.check_limits(jobspec(queue="debug", duration=3600.0))
    with pytest.raises(SpecError, match=r"^requested duration \(1.5h\) exceeds policy limit"):
        config.check_limits(jobspec(queue="debug", duration=5400.0))
    with pytest.raises(
        SpecError, match=r"^requested duration \(unlimited\) exceeds policy limit of 1h for queue"
    ):
        config.check_limits(jobspec(queue="debug"))
    general = QueueConfig.from_config({"policy": {"limits": {"duration": "1m"}}})
    with pytest.raises(SpecError, match=r"^requested duration \(2m\) exceeds policy limit of 1m$"):
        general.check_limits(jobspec(duration=120.0))


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"queues": {"q": {"requires": "x"}}}, "[queues.q] requires: must be an array"),
        ({"queues": {"q": {"requires": ["a|b"]}}}, "[queues.q] requires: invalid character '|'"),
        (
            {"queues": {"q": {"policy": {"limits": {"duration": 60}}}}},
            "[queues.q.policy.limits] duration: must be a duration such as 1h, got 60",
        ),
        (
            {"policy": {"jobspec": {"defaults": {"system": {"queue": "q"}}}}},
            "[policy.jobspec.defaults.system] queue: default queue 'q' must be in [queues]",
        ),
        (
            {"policy": {"jobspec": {"defaults": {"system": {"duration": "1x"}}}}},
            '[policy.jobspec.defaults.system] duration: invalid Flux standard duration "1x"',
        ),
    ],
)
def test_bad_values_name_the_key(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        QueueConfig.from_config(config)
    assert str(info.value).startswith(message)


CONSTRAINTS = st.one_of(
    st.none(),
    st.builds(lambda p: {"properties": p}, st.lists(st.sampled_from(["a", "fast", "debug"]))),
    st.builds(lambda r: {"ranks": [r]}, st.sampled_from(["0", "1-2"])),
)


@given(
    queue=st.sampled_from([None, "batch", "debug", "any"]),
    constraints=CONSTRAINTS,
    duration=st.sampled_from([0, 1.0, 7200.0]),
)
def test_frob_keeps_the_jobs_own_requests_and_applies_once(
    queue: str | None, constraints: dict[str, Any] | None, duration: float
) -> None:
    config = QueueConfig.from_config(CONFIG)
    system: dict[str, Any] = {"duration": duration}
    if queue is not None:
        system["queue"] = queue
    if constraints is not None:
        system["constraints"] = constraints
    once = config.frob(jobspec(**system))
    assert config.frob(once) == once  # idempotent: a job updated and sent again is the same
    got = once["attributes"]["system"]
    assert got["queue"] == (queue or "batch")
    assert got["duration"] == (duration or config.queues[got["queue"]].policy.default_duration)
    if constraints and "properties" in constraints:
        assert set(constraints["properties"]) <= set(got["constraints"]["properties"])
    elif constraints:
        assert got["constraints"] == constraints or got["constraints"]["and"][0] == constraints
