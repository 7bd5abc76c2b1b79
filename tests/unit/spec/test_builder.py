"""The jobspec builder: flux-core's ``JobspecV1.from_command`` shapes, setters and errors.

The expected documents below are what flux-core's code (v0.88,
``flux/job/Jobspec.py``) produces for the same arguments; they were also
checked byte for byte against ``flux submit --dry-run`` run from flux-core's
own Python sources.  Where they differ from RFC 25's example YAML, flux-core
wins, because a Flux user must get the jobspec flux gives:

- the slot label is ``task`` (RFC 25 writes ``default`` or ``myslot``);
- 1.1 (``-N4``): ``-N`` without ``-n`` means one task per node on whole nodes,
  so the node vertex carries ``exclusive: true`` (the RFC's YAML has none);
- 2.1 (``-n5 -N4``): flux-core asks for ``ceil(5/4) = 2`` slots per node and a
  ``total`` of 5 tasks (the RFC's YAML asks for 1 slot per node, which cannot
  hold 5 tasks on 4 nodes);
- ``duration`` is 0 (no limit) unless given (the RFC's examples say 3600).
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.errors import JobspecError
from pflux.spec import builder
from pflux.spec.jobspec import validate

ENV = {"HOME": "/home/flux"}
CWD = "/home/flux"


def build(command: list[str], **kwargs: Any) -> dict[str, Any]:
    """from_command with the RFC's environment and cwd, checked against the validator."""
    jobspec = builder.from_command(command, environment=ENV, cwd=CWD, **kwargs)
    validate(jobspec)
    return jobspec


def attributes(**system: Any) -> dict[str, Any]:
    return {"system": {"duration": 0, "environment": ENV, "cwd": CWD, **system}}


def slot(count: int, cores: int = 1, gpus: int = 0) -> dict[str, Any]:
    children: list[dict[str, Any]] = [{"type": "core", "count": cores}]
    if gpus:
        children.append({"type": "gpu", "count": gpus})
    return {"type": "slot", "count": count, "with": children, "label": "task"}


def task(command: list[str], **count: int) -> list[dict[str, Any]]:
    return [{"command": command, "slot": "task", "count": count}]


# RFC 25's use cases, with the arguments flux-core's CLI passes for them
USE_CASES = {
    "1.1 -N4 flux start": (
        (["flux", "start"], {"num_tasks": 4, "num_nodes": 4, "exclusive": True}),
        {
            "resources": [
                {"type": "node", "count": 4, "exclusive": True, "with": [slot(1)]},
            ],
            "tasks": task(["flux", "start"], per_slot=1),
            "attributes": attributes(),
            "version": 1,
        },
    ),
    "2.1 -n5 -N4 hostname": (
        (["hostname"], {"num_tasks": 5, "num_nodes": 4}),
        {
            "resources": [{"type": "node", "count": 4, "with": [slot(2)]}],
            "tasks": task(["hostname"], total=5),
            "attributes": attributes(),
            "version": 1,
        },
    ),
    "2.2 -n10 -c2 myapp": (
        (["myapp"], {"num_tasks": 10, "cores_per_task": 2}),
        {
            "resources": [slot(10, cores=2)],
            "tasks": task(["myapp"], per_slot=1),
            "attributes": attributes(),
            "version": 1,
        },
    ),
    "2.3 -n10 -c2 -g1 myapp": (
        (["myapp"], {"num_tasks": 10, "cores_per_task": 2, "gpus_per_task": 1}),
        {
            "resources": [slot(10, cores=2, gpus=1)],
            "tasks": task(["myapp"], per_slot=1),
            "attributes": attributes(),
            "version": 1,
        },
    ),
    "2.4 -n16 -N4 -g1 myapp": (
        (["myapp"], {"num_tasks": 16, "num_nodes": 4, "gpus_per_task": 1}),
        {
            "resources": [{"type": "node", "count": 4, "with": [slot(4, gpus=1)]}],
            "tasks": task(["myapp"], per_slot=1),
            "attributes": attributes(),
            "version": 1,
        },
    ),
}


@pytest.mark.parametrize("case", sorted(USE_CASES))
def test_rfc25_use_cases_as_flux_builds_them(case: str) -> None:
    (command, kwargs), expected = USE_CASES[case]
    jobspec = build(command, **kwargs)
    assert jobspec == expected
    # same key order too, so the JSON text is flux-core's
    assert json.dumps(jobspec) == json.dumps(expected)


def test_flux_key_order() -> None:
    jobspec = builder.from_command(
        ["app"],
        num_tasks=2,
        num_nodes=1,
        exclusive=True,
        duration=60,
        environment={"A": "1"},
        cwd="/w",
        name="job",
        output="o",
        queue="q",
        bank="b",
    )
    assert list(jobspec) == ["resources", "tasks", "attributes", "version"]
    assert list(jobspec["resources"][0]) == ["type", "count", "exclusive", "with"]
    assert list(jobspec["resources"][0]["with"][0]) == ["type", "count", "with", "label"]
    assert list(jobspec["tasks"][0]) == ["command", "slot", "count"]
    system = jobspec["attributes"]["system"]
    assert list(system) == ["duration", "environment", "cwd", "job", "shell", "queue", "bank"]


def test_defaults_are_one_task_one_core_no_limit() -> None:
    jobspec = builder.from_command(["true"])
    assert jobspec == {
        "resources": [slot(1)],
        "tasks": task(["true"], per_slot=1),
        "attributes": {"system": {"duration": 0}},
        "version": 1,
    }
    validate(jobspec)


@pytest.mark.parametrize(
    ("ntasks", "nnodes", "slots", "count"),
    [
        (4, 4, 1, {"per_slot": 1}),
        (5, 4, 2, {"total": 5}),
        (7, 2, 4, {"total": 7}),
        (8, 2, 4, {"per_slot": 1}),
        (9, 3, 3, {"per_slot": 1}),
        (10, 3, 4, {"total": 10}),
        (1, 1, 1, {"per_slot": 1}),
    ],
)
def test_slots_per_node_as_flux(
    ntasks: int, nnodes: int, slots: int, count: dict[str, int]
) -> None:
    jobspec = build(["a"], num_tasks=ntasks, num_nodes=nnodes)
    assert jobspec["resources"][0]["with"][0]["count"] == slots
    assert jobspec["tasks"][0]["count"] == count


def test_zero_gpus_adds_no_gpu_vertex() -> None:
    assert build(["a"], gpus_per_task=0)["resources"] == [slot(1)]


def test_duration_is_float_seconds() -> None:
    system = build(["a"], duration=90)["attributes"]["system"]
    assert system["duration"] == 90.0
    assert isinstance(system["duration"], float)
    assert build(["a"], duration=0)["attributes"]["system"]["duration"] == 0.0


def test_command_is_copied_to_a_list() -> None:
    command = ("a", "b")
    assert builder.from_command(command)["tasks"][0]["command"] == ["a", "b"]


def test_environment_is_copied() -> None:
    env = {"A": "1"}
    jobspec = builder.from_command(["a"], environment=env)
    env["B"] = "2"
    assert jobspec["attributes"]["system"]["environment"] == {"A": "1"}


def test_name_queue_bank() -> None:
    system = build(["a"], name="n", queue="batch", bank="b")["attributes"]["system"]
    assert system["job"] == {"name": "n"}
    assert system["queue"] == "batch"
    assert system["bank"] == "b"


def test_stdio_files_become_shell_options() -> None:
    jobspec = build(["a"], input="in", output="out.{{id}}", error="err", label_io=True)
    assert jobspec["attributes"]["system"]["shell"]["options"] == {
        "input": {"stdin": {"type": "file", "path": "in"}},
        "output": {
            "stdout": {"type": "file", "path": "out.{{id}}", "label": True},
            "stderr": {"type": "file", "path": "err", "label": True},
        },
    }


@pytest.mark.parametrize("keep", ["kvs", "none"])
def test_kvs_and_none_output_set_nothing(keep: str) -> None:
    assert "shell" not in build(["a"], output=keep, error=keep)["attributes"]["system"]


def test_label_without_files_sets_nothing() -> None:
    assert "shell" not in build(["a"], label_io=True)["attributes"]["system"]


def test_unbuffered() -> None:
    options = build(["a"], unbuffered=True)["attributes"]["system"]["shell"]["options"]
    assert options == {
        "output": {
            "stdout": {"buffer": {"type": "none"}},
            "stderr": {"buffer": {"type": "none"}},
            "batch-timeout": 0.05,
        },
        "input": {"batch-timeout": 0.0},
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_tasks": 0}, "task count must be an integer >= 1"),
        ({"num_tasks": True}, "task count must be an integer >= 1"),
        ({"num_tasks": 1.0}, "task count must be an integer >= 1"),
        ({"cores_per_task": 0}, "cores per task must be an integer >= 1"),
        ({"gpus_per_task": -1}, "gpus per task must be an integer >= 0"),
        ({"num_nodes": 0}, "node count must be an integer >= 1 (if set)"),
        ({"num_tasks": 2, "num_nodes": 3}, "node count must not be greater than task count"),
        ({"exclusive": True}, "exclusive can only be set with a node count"),
        ({"duration": -1.0}, "duration must not be negative"),
        ({"duration": math.nan}, "duration must be a normal, finite value"),
        ({"duration": math.inf}, "duration must be a normal, finite value"),
        ({"duration": "1h"}, "duration must be a number of seconds"),
        ({"duration": True}, "duration must be a number of seconds"),
    ],
)
def test_errors_in_flux_words(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(JobspecError) as info:
        builder.from_command(["a"], **kwargs)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ncores": 1, "per_resource_type": "socket", "per_resource_count": 1},
         "Invalid per_resource_type='socket' specified"),
        ({"ncores": 1, "per_resource_type": "node"},
         "must specify a per_resource_count with per_resource_type"),
        ({"ncores": 1, "per_resource_count": 2},
         "must specify a per_resource_type with per_resource_count"),
        ({"ncores": 0}, "ncores must be an integer >= 1"),
        ({"ncores": 2, "gpus_per_node": 1}, "gpus_per_node must be specified with nnodes"),
        ({"nnodes": 2}, "Specifying nnodes also requires ncores or exclusive"),
        ({"ncores": 2, "exclusive": True}, "exclusive can only be set with a node count"),
        ({}, "must specify node or core count with per_resource"),
    ],
)  # fmt: skip
def test_per_resource_errors_in_flux_words(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(JobspecError) as info:
        builder.per_resource(["a"], **kwargs)
    assert str(info.value) == message


def test_per_resource_takes_from_commands_other_arguments() -> None:
    jobspec = builder.per_resource(
        ["a"], ncores=2, per_resource_type="core", per_resource_count=3, duration=60,
        environment={"A": "1"}, cwd="/w", output="out",
    )  # fmt: skip
    system = jobspec["attributes"]["system"]
    assert list(system) == ["duration", "shell", "environment", "cwd"]  # flux-core's order
    assert system["duration"] == 60.0
    assert system["shell"]["options"] == {
        "per-resource": {"type": "core", "count": 3},
        "output": {"stdout": {"type": "file", "path": "out"}},
    }


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ([], "command must not be empty"),
        ((), "command must not be empty"),
        ("hostname", "command must be a list of strings"),
        (["a", 1], "command must be a list of strings"),
        (None, "command must be a list of strings"),
    ],
)
def test_bad_commands(command: Any, message: str) -> None:
    with pytest.raises(JobspecError, match=message):
        builder.from_command(command)


# --------------------------------------------------------------------- setters


@pytest.mark.parametrize(
    ("key", "path"),
    [
        # flux-core t2710's --setattr cases
        ("user.meep", ["attributes", "user", "meep"]),
        ("foo", ["attributes", "system", "foo"]),
        (".test", ["attributes", "test"]),
        ("test2", ["attributes", "system", "test2"]),
        ("system.bar", ["attributes", "system", "bar"]),
        ("attributes.system.x", ["attributes", "system", "x"]),
        (".user.y", ["attributes", "user", "y"]),
        ("exec.test.run_duration", ["attributes", "system", "exec", "test", "run_duration"]),
        ("attributes", ["attributes", "system", "attributes"]),
        ("users.x", ["attributes", "system", "users", "x"]),
    ],
)
def test_attribute_path_follows_flux(key: str, path: list[str]) -> None:
    assert builder.attribute_path(key) == path


@pytest.mark.parametrize("key", ["", ".", "user.", "a..b", "system."])
def test_attribute_path_rejects_empty_components(key: str) -> None:
    with pytest.raises(JobspecError, match="has an empty component"):
        builder.attribute_path(key)


def test_set_attr_builds_mappings_and_overrides() -> None:
    jobspec = build(["a"])
    builder.set_attr(jobspec, "user.a.b", 1)
    builder.set_attr(jobspec, "user.a.c", [1, 2])
    builder.set_attr(jobspec, "duration", 60)
    builder.set_attr(jobspec, "system.environment", {})
    assert jobspec["attributes"]["user"] == {"a": {"b": 1, "c": [1, 2]}}
    assert jobspec["attributes"]["system"]["duration"] == 60
    assert jobspec["attributes"]["system"]["environment"] == {}
    validate(jobspec)


def test_set_attr_through_a_non_mapping_fails() -> None:
    jobspec = build(["a"])
    builder.set_attr(jobspec, "foo", 1)
    with pytest.raises(JobspecError) as info:
        builder.set_attr(jobspec, "foo.bar", 2)
    assert str(info.value) == (
        "cannot set attributes.system.foo.bar: attributes.system.foo is already set"
        " and is not a mapping"
    )


def test_set_shell_option() -> None:
    jobspec = build(["a"], output="o")
    builder.set_shell_option(jobspec, "verbose", 2)
    builder.set_shell_option(jobspec, "output.stdout.label", True)
    options = jobspec["attributes"]["system"]["shell"]["options"]
    assert options == {
        "output": {"stdout": {"type": "file", "path": "o", "label": True}},
        "verbose": 2,
    }
    with pytest.raises(JobspecError) as info:
        builder.set_shell_option(jobspec, "a..b", 1)
    assert str(info.value) == 'shell option "a..b" has an empty component'


# ------------------------------------------------------------------ properties

counts = st.integers(min_value=1, max_value=10_000)


@settings(max_examples=300)
@given(
    ntasks=counts,
    cores=st.integers(min_value=1, max_value=256),
    gpus=st.none() | st.integers(min_value=0, max_value=16),
    nodes=st.none() | counts,
    exclusive=st.booleans(),
)
def test_every_valid_request_builds_a_valid_jobspec_with_room_for_every_task(
    ntasks: int, cores: int, gpus: int | None, nodes: int | None, exclusive: bool
) -> None:
    kwargs: dict[str, Any] = {"num_tasks": ntasks, "cores_per_task": cores, "gpus_per_task": gpus}
    if nodes is not None:
        kwargs |= {"num_nodes": nodes, "exclusive": exclusive}
    try:
        jobspec = builder.from_command(["app"], **kwargs)
    except JobspecError:
        assert nodes is not None
        assert nodes > ntasks
        return
    validate(jobspec)
    top = jobspec["resources"][0]
    vertex = top["with"][0] if nodes is not None else top
    nslots = vertex["count"] * (top["count"] if nodes is not None else 1)
    count = jobspec["tasks"][0]["count"]
    assert count.get("total", ntasks) == ntasks
    assert nslots >= ntasks  # every task has a slot
    if "per_slot" in count:
        assert nslots == ntasks
    assert vertex["with"][0] == {"type": "core", "count": cores}
    assert len(vertex["with"]) == (2 if gpus else 1)
