"""RFC 25 jobspec: each rule, decoding, encoding, the JobspecView accessors, and properties."""

from __future__ import annotations

import copy
import enum
import json
import math
import re
import subprocess
import sys
from collections.abc import Callable
from importlib import resources
from typing import Any, NamedTuple
from unittest import mock

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pflux.errors import JobspecError, SpecError
from pflux.spec import builder, jobspec
from pflux.spec.jobspec import JobspecView, accept, walker
from support.rfc25 import example


def slot_only() -> dict[str, Any]:
    """Use case 2.3: slot>(core,gpu)."""
    return example("2.3")


def problems_of(doc: Any) -> list[tuple[str, str]]:
    with pytest.raises(JobspecError) as info:
        jobspec.validate(doc)
    return info.value.problems


def edited(
    change: Callable[[dict[str, Any]], object], base: Callable[[], dict[str, Any]] = example
) -> dict[str, Any]:
    doc = base()
    change(doc)
    return doc


def node(doc: dict[str, Any]) -> dict[str, Any]:
    vertex: dict[str, Any] = doc["resources"][0]
    return vertex


def slot(doc: dict[str, Any]) -> dict[str, Any]:
    vertex: dict[str, Any] = doc["resources"][0]["with"][0]
    return vertex


def core(doc: dict[str, Any]) -> dict[str, Any]:
    vertex: dict[str, Any] = slot(doc)["with"][0]
    return vertex


def task(doc: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = doc["tasks"][0]
    return found


def system(doc: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = doc["attributes"]["system"]
    return found


# ------------------------------------------------------------------- the rules

# (what is broken, the change, the one problem it must give)
DELETE = object()
ENV = "attributes.system.environment"
NODE, SLOT, CORE = "resources[0]", "resources[0].with[0]", "resources[0].with[0].with[0]"
LEAF_KEYS = "unknown key (allowed: count, type, unit)"


class Rule(NamedTuple):
    """Set ``where`` to ``value`` (or delete it) in RFC 25's example: one problem, at ``at``."""

    where: str
    value: object
    message: str
    at: str | None = None  # the problem's path when it is not ``where``


RULES = [
    # the document
    Rule("extra", 1, "unknown key (allowed: attributes, resources, tasks, version)"),
    Rule("version", DELETE, "required key is missing"),
    Rule("version", 2, "must be 1, got 2"),
    Rule("version", True, "must be 1, got true"),
    Rule("version", 1.0, "must be 1, got 1.0"),
    Rule("version", "1", 'must be 1, got "1"'),
    # resources
    Rule("resources", DELETE, "required key is missing"),
    Rule("resources", {}, "must be a list holding one node or slot, got an empty mapping"),
    Rule("resources", [], "must hold exactly one vertex (a node or a slot), got 0 vertices"),
    Rule("resources[0]", "node", 'must be a resource vertex mapping, got "node"'),
    Rule("resources[0].type", "core", 'must be "node" or "slot", got "core"'),
    Rule("resources[0].type", DELETE, "required key is missing"),
    Rule(f"{NODE}.count", DELETE, "required key is missing"),
    Rule(f"{NODE}.count", 0, "must be an integer >= 1, got 0"),
    Rule(f"{NODE}.count", True, "must be an integer >= 1, got true"),
    Rule(f"{NODE}.count", 4.0, "must be an integer >= 1, got 4.0"),
    Rule(f"{NODE}.count", 2**63, "must be an integer >= 1 that fits in 64 bits"),
    Rule(f"{NODE}.count", {"min": 1}, "must be an integer >= 1, got a mapping"),
    Rule(f"{NODE}.unit", 1, "must be a string, got 1"),
    Rule(f"{NODE}.label", "x", "unknown key (allowed: count, exclusive, type, unit, with)"),
    Rule(f"{NODE}.exclusive", "yes", 'must be a boolean, got "yes"'),
    Rule(f"{NODE}.with", DELETE, "required key is missing"),
    Rule(f"{NODE}.with", {}, "must be a list holding one slot, got an empty mapping"),
    Rule(
        f"{NODE}.with[1]",
        {"type": "slot", "count": 1, "label": "default", "with": [{"type": "core", "count": 1}]},
        "must hold exactly one slot, got 2 vertices",
        f"{NODE}.with",
    ),
    Rule(f"{SLOT}.type", "node", 'must be "slot", got "node"'),
    Rule(f"{SLOT}.type", "core", 'must be "slot", got "core"'),
    Rule(f"{SLOT}.label", DELETE, "required key is missing"),
    Rule(f"{SLOT}.label", 7, "must be a string, got 7"),
    Rule(f"{SLOT}.count", 0, "must be an integer >= 1, got 0"),
    Rule(f"{SLOT}.id", "x", "unknown key (allowed: count, exclusive, label, type, unit, with)"),
    Rule(f"{SLOT}.with", DELETE, "required key is missing"),
    Rule(f"{SLOT}.with", [], "must hold one core and optionally one gpu, got 0 vertices"),
    Rule(f"{SLOT}.with", 2, "must be a list holding one core and optionally one gpu, got 2"),
    Rule(
        f"{CORE}.type",
        "gpu",
        "must hold one core and optionally one gpu, got 0 cores and 1 gpu",
        f"{SLOT}.with",
    ),
    Rule(
        f"{SLOT}.with[1]",
        {"type": "core", "count": 1},
        "must hold one core and optionally one gpu, got 2 cores and 0 gpus",
        f"{SLOT}.with",
    ),
    Rule(f"{CORE}.type", "slot", 'must be "core" or "gpu", got "slot"'),
    Rule(f"{CORE}.count", 0, "must be an integer >= 1, got 0"),
    Rule(f"{CORE}.count", "2", 'must be an integer >= 1, got "2"'),
    Rule(f"{CORE}.count", DELETE, "required key is missing"),
    Rule(f"{CORE}.with", [], LEAF_KEYS),
    Rule(f"{CORE}.exclusive", True, LEAF_KEYS),
    Rule(f"{CORE}.label", "c", LEAF_KEYS),
    Rule(f"{SLOT}.with[1]", "gpu", 'must be a core or gpu vertex mapping, got "gpu"'),
    Rule(
        f"{SLOT}.with[1]",
        {"type": "gpu", "count": -1},
        "must be an integer >= 0, got -1",
        f"{SLOT}.with[1].count",
    ),
    # tasks
    Rule("tasks", DELETE, "required key is missing"),
    Rule("tasks", {}, "must be a list holding one task, got an empty mapping"),
    Rule("tasks", [], "must hold exactly one task, got 0 tasks"),
    Rule("tasks[0]", "app", 'must be a task mapping, got "app"'),
    Rule("tasks[0].attributes", {}, "unknown key (allowed: command, count, slot)"),
    Rule("tasks[0].command", DELETE, "required key is missing"),
    Rule("tasks[0].command", "app", 'must be a non-empty list of strings, got "app"'),
    Rule("tasks[0].command", [], "must be a non-empty list of strings, got an empty list"),
    Rule("tasks[0].command[1]", 3, "must be a string, got 3"),
    Rule("tasks[0].slot", DELETE, "required key is missing"),
    Rule("tasks[0].slot", 1, "must be a string, got 1"),
    Rule("tasks[0].slot", "other", 'must name the slot\'s label "default", got "other"'),
    Rule("tasks[0].count", DELETE, "required key is missing"),
    Rule("tasks[0].count", 1, "must be a mapping holding exactly one of per_slot or total, got 1"),
    Rule("tasks[0].count", {}, "must hold exactly one of per_slot or total, got neither"),
    Rule(
        "tasks[0].count.total",
        2,
        "must hold exactly one of per_slot or total, got both",
        "tasks[0].count",
    ),
    Rule("tasks[0].count.per_slot", 0, "must be an integer >= 1, got 0"),
    Rule("tasks[0].count.per_slot", True, "must be an integer >= 1, got true"),
    # attributes
    Rule("attributes", DELETE, "required key is missing"),
    Rule("attributes", None, "must be a mapping holding system (and optionally user), got null"),
    Rule("attributes.foo", {}, "unknown key (allowed: system, user)"),
    Rule("attributes.system", DELETE, "required key is missing"),
    Rule("attributes.system", [], "must be a mapping, got an empty list"),
    Rule("attributes.user", [1], "must be a mapping, got a list of 1"),
    Rule("attributes.system.duration", DELETE, "required key is missing"),
    Rule("attributes.system.duration", "1h", 'must be a finite number >= 0, got "1h"'),
    Rule("attributes.system.duration", -1, "must be a finite number >= 0, got -1"),
    Rule("attributes.system.duration", -0.5, "must be a finite number >= 0, got -0.5"),
    Rule("attributes.system.duration", True, "must be a finite number >= 0, got true"),
    Rule("attributes.system.duration", math.inf, "must be a finite number >= 0, got inf"),
    Rule("attributes.system.duration", math.nan, "must be a finite number >= 0, got nan"),
    Rule(
        "attributes.system.duration", 2**63, "must be a finite number >= 0, got 9223372036854775808"
    ),
    Rule("attributes.system.cwd", 1, "must be a string, got 1"),
    Rule("attributes.system.queue", ["a"], "must be a string, got a list of 1"),
    Rule(ENV, ["A=1"], "must be a mapping, got a list of 1"),
    Rule(f"{ENV}.N", 1, "must be a string, got 1"),
    Rule("attributes.system.constraints", ["a"], "must be a mapping, got a list of 1"),
    Rule(
        "attributes.system.dependencies",
        {"scheme": "after"},
        "must be a list of dependency mappings, got a mapping",
    ),
    Rule(
        "attributes.system.dependencies",
        ["afterok:1"],
        'must be a mapping, got "afterok:1"',
        "attributes.system.dependencies[0]",
    ),
    Rule(
        "attributes.system.dependencies",
        [{"scheme": "afterok", "value": 1}],
        "must be a string, got 1",
        "attributes.system.dependencies[0].value",
    ),
    Rule(
        "attributes.system.dependencies",
        [{"value": "1"}],
        "required key is missing",
        "attributes.system.dependencies[0].scheme",
    ),
    Rule(
        "attributes.system.shell",
        {"options": []},
        "must be a mapping, got an empty list",
        "attributes.system.shell.options",
    ),
    Rule(
        "attributes.system.job",
        {"name": 5},
        "must be a string, got 5",
        "attributes.system.job.name",
    ),
    Rule("attributes.system.job", "x", 'must be a mapping, got "x"'),
    # JSON data only, anywhere
    Rule("attributes.user", {"t": (1, 2)}, "must be JSON data, got a tuple", "attributes.user.t"),
    Rule("attributes.system.s", {1}, "must be JSON data, got a set"),
    Rule("attributes.user", {1: "x"}, "keys must be strings, got 1"),
    Rule(
        "attributes.user",
        {"x": [math.nan]},
        "must be a finite number, got nan",
        "attributes.user.x[0]",
    ),
    Rule(
        "attributes.user",
        {"x": 2**64},
        "must be an integer that fits in 64 bits",
        "attributes.user.x",
    ),
    Rule(
        "attributes.user",
        {"x": "\ud800"},
        "must be valid Unicode text, got lone surrogates",
        "attributes.user.x",
    ),
    Rule("tasks[0].command[0]", "a\udcff", 'must be a string, got "a\\udcff"'),
]


def parts(where: str) -> list[str | int]:
    """``a.b[0].c`` -> ``["a", "b", 0, "c"]``."""
    return [
        int(index) if index else key for key, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", where)
    ]


def applied(rule: Rule) -> dict[str, Any]:
    doc = example()
    *path, last = parts(rule.where)
    parent: Any = doc
    for part in path:
        parent = parent[part]
    if rule.value is DELETE:
        del parent[last]
    elif isinstance(parent, list) and last == len(parent):
        parent.append(copy.deepcopy(rule.value))
    else:
        parent[last] = copy.deepcopy(rule.value)
    return doc


def _rule_id(rule: Rule) -> str:
    value = "<deleted>" if rule.value is DELETE else repr(rule.value)
    return f"{rule.where}={value}"[:60]


@pytest.mark.parametrize("rule", RULES, ids=[_rule_id(r) for r in RULES])
def test_rule(rule: Rule) -> None:
    assert problems_of(applied(rule)) == [(rule.at or rule.where, rule.message)]


def test_all_problems_are_reported_in_document_order() -> None:
    doc = example()
    node(doc)["count"] = 0
    core(doc)["count"] = 0
    task(doc)["count"] = {"per_slot": 0}
    task(doc)["color"] = "red"
    system(doc)["duration"] = "1h"
    assert [path for path, _ in problems_of(doc)] == [
        "resources[0].count",
        "resources[0].with[0].with[0].count",
        "tasks[0].color",
        "tasks[0].count.per_slot",
        "attributes.system.duration",
    ]


def test_error_message_joins_the_problems() -> None:
    error = JobspecError(problems_of(edited(lambda d: d.update(version=2) or d.pop("tasks"))))
    assert str(error) == "tasks: required key is missing; version: must be 1, got 2"
    assert isinstance(error, SpecError)


@pytest.mark.parametrize("doc", [None, [], "version: 1", 1, True])
def test_document_must_be_a_mapping(doc: object) -> None:
    problems = problems_of(doc)
    assert len(problems) == 1
    assert problems[0][0] == ""
    assert problems[0][1].startswith("jobspec must be a mapping, got ")


def test_empty_mapping_names_every_missing_key() -> None:
    assert problems_of({}) == [
        (key, "required key is missing") for key in ("version", "resources", "tasks", "attributes")
    ]


def test_long_and_odd_values_are_described_briefly() -> None:
    (problem,) = problems_of(edited(lambda d: task(d).update(slot="x" * 100)))
    assert problem[1].endswith('got "' + "x" * 37 + '..."')
    (problem,) = problems_of(edited(lambda d: node(d).update(count=-(10**40))))
    assert problem[1] == "must be an integer >= 1, got a very large integer"


# ------------------------------------------------------------------- decisions


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(
            lambda d: node(d).update(exclusive=True), id="exclusive on node (RFC 25 prose)"
        ),
        pytest.param(lambda d: slot(d).update(exclusive=False), id="exclusive on slot"),
        pytest.param(lambda d: node(d).update(unit="node"), id="unit on node"),
        pytest.param(lambda d: core(d).update(unit="core"), id="unit on core"),
        pytest.param(
            lambda d: slot(d)["with"].append({"type": "gpu", "count": 0}),
            id="gpu count 0 (flux-core)",
        ),
        pytest.param(
            lambda d: slot(d)["with"].insert(0, {"type": "gpu", "count": 1}), id="gpu before core"
        ),
        pytest.param(lambda d: system(d).update(duration=0), id="duration 0 (unlimited)"),
        pytest.param(
            lambda d: system(d).update(queue="batch", bank="b", extra=[1, {"a": None}]),
            id="other system keys",
        ),
        pytest.param(
            lambda d: system(d).update(constraints={"properties": ["ssd"]}), id="constraints"
        ),
        pytest.param(
            lambda d: system(d).update(
                dependencies=[{"scheme": "string", "value": "foo", "type": "in", "scope": "user"}]
            ),
            id="dependency with extra keys (RFC 26)",
        ),
        pytest.param(
            lambda d: system(d).update(shell={"options": {"cpu-affinity": "per-task"}}),
            id="shell options",
        ),
        pytest.param(lambda d: system(d).update(job={"name": "x"}), id="job name"),
        pytest.param(lambda d: d["attributes"].update(user={}), id="empty user"),
        pytest.param(lambda d: d["attributes"].update(user={"deep": [[[[1.5]]]]}), id="user data"),
        pytest.param(lambda d: task(d).update(count={"total": 9}), id="total"),
    ],
)
def test_accepted(change: Callable[[dict[str, Any]], object]) -> None:
    jobspec.validate(edited(change))


def test_slot_only_graphs_are_valid() -> None:
    jobspec.validate(slot_only())
    jobspec.validate(edited(lambda d: d["resources"][0]["with"].pop(), slot_only))


def test_nesting_is_bounded() -> None:
    deep: list[Any] = []
    inner = deep
    for _ in range(100):
        inner.append([])
        inner = inner[0]
    (problem,) = problems_of(edited(lambda d: d["attributes"].update(user={"x": deep})))
    assert problem[1] == "nested too deeply (more than 64 levels)"


def test_a_cycle_is_rejected_not_looped_on() -> None:
    loop: list[Any] = []
    loop.append(loop)
    (problem,) = problems_of(edited(lambda d: d["attributes"].update(user={"loop": loop})))
    assert problem[1].startswith("nested too deeply")


def test_free_form_size_is_bounded() -> None:
    # what a YAML alias bomb expands to: a few objects shared many times over
    level: list[Any] = ["x"] * 100
    for _ in range(3):
        level = [level] * 100
    problems = problems_of(edited(lambda d: d["attributes"].update(user={"bomb": level})))
    assert problems[-1][1] == "too large: more than 100000 values"


# -------------------------------------------------------------------- decoding


def test_decode_json_and_yaml() -> None:
    as_json = json.dumps(example())
    assert jobspec.decode(as_json) == example()
    assert jobspec.decode(as_json.encode(), fmt="json") == example()
    assert jobspec.decode("  \n" + as_json) == example()
    assert jobspec.decode(as_json, fmt="yaml") == example()  # YAML is a superset
    assert jobspec.decode("version: 1\nlist: [a, b]\n") == {"version": 1, "list": ["a", "b"]}


def test_auto_reads_braces_as_json_only() -> None:
    # no fallback: YAML would read this JSON typo as {"a": null}
    with pytest.raises(JobspecError, match="invalid JSON"):
        jobspec.decode('{"a": }')
    with pytest.raises(JobspecError, match="invalid JSON"):
        jobspec.decode("{version: 1, tasks: []}")
    assert jobspec.decode("{version: 1, tasks: []}", fmt="yaml") == {"version": 1, "tasks": []}


@pytest.mark.parametrize(
    ("data", "fmt", "message"),
    [
        ('{"version": }', "auto", "invalid JSON at line 1, column 13: unexpected character"),
        ('{"a": 1,\n "b": [}', "auto", "invalid JSON at line 2, column 8"),
        ("version: 1", "json", "invalid JSON at line 1, column 1"),
        ("a: b: c", "yaml", "invalid YAML at line 1, column 5: mapping values are not allowed"),
        ("a: [1, 2", "auto", "invalid YAML at line 2, column 1: while parsing a flow sequence"),
        ("a: 1\na: 2\n", "auto", "invalid YAML at line 2, column 1: found duplicate key 'a'"),
        (
            "---\na: 1\n---\nb: 2\n",
            "auto",
            "invalid YAML at line 3, column 1: expected a single document in the stream, but found",
        ),
        (b"a: \xff\xfe\x00", "auto", "invalid YAML"),
        ("a: 2024-13-45", "auto", "invalid YAML value"),
        ("a: 1" + "0" * 5000, "auto", "invalid YAML value"),
    ],
)
def test_syntax_errors(data: str | bytes, fmt: jobspec.Format, message: str) -> None:
    with pytest.raises(JobspecError) as info:
        jobspec.decode(data, fmt=fmt)
    ((path, got),) = info.value.problems
    assert path == ""
    assert got.startswith(message), got


def test_yaml_merge_keys_are_not_duplicates() -> None:
    text = "base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\n"
    assert jobspec.decode(text) == {"base": {"x": 1, "y": 2}, "other": {"x": 1, "y": 3}}


def test_json_duplicate_keys_keep_the_last() -> None:
    assert jobspec.decode('{"a": 1, "a": 2}') == {"a": 2}


def test_empty_yaml_is_not_a_jobspec() -> None:
    with pytest.raises(JobspecError, match="jobspec must be a mapping, got null"):
        jobspec.loads("")


def test_unknown_format_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unknown jobspec format"):
        jobspec.decode("{}", fmt="toml")  # type: ignore[arg-type]


def test_yaml_values_that_are_not_json_are_rejected() -> None:
    text = jobspec.dumps_yaml(example()) + "  user:\n    when: 2024-01-01\n"
    with pytest.raises(JobspecError) as info:
        jobspec.loads(text)
    assert info.value.problems == [("attributes.user.when", "must be JSON data, got a date")]


# -------------------------------------------------------------------- encoding


def test_dumps_is_canonical_json() -> None:
    doc = example()
    system(doc)["environment"]["GREETING"] = "héllo ƒ"
    out = jobspec.dumps(doc)
    assert (
        out == json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    )
    assert jobspec.dumps(JobspecView(doc)) == out
    assert out.startswith(b'{"attributes":{"system":{"cwd":"/home/flux","duration":3600.0,')


def test_dumps_reports_what_cannot_be_json() -> None:
    with pytest.raises(JobspecError, match="cannot be encoded as JSON"):
        jobspec.dumps({"x": {1, 2}})


def test_dumps_yaml_is_block_style_in_insertion_order() -> None:
    text = jobspec.dumps_yaml(JobspecView(example()))
    assert text.startswith("version: 1\nresources:\n- type: node\n  count: 4\n  with:\n")
    assert "command:\n  - app\n" in text
    assert "{" not in text
    assert jobspec.decode(text) == example()


def test_dumps_yaml_reports_what_cannot_be_yaml() -> None:
    with pytest.raises(JobspecError, match="cannot be encoded as YAML"):
        jobspec.dumps_yaml({"x": object()})


# --------------------------------------------------------------------- JobspecView


def test_accessors_node_slot_core() -> None:
    doc = example()
    system(doc).update(
        queue="batch",
        dependencies=[{"scheme": "afterok", "value": "ƒ2"}],
        shell={"options": {"verbose": 1}},
    )
    spec = jobspec.loads(jobspec.dumps(doc))
    assert spec.data == doc
    assert spec.command == ["app"]
    assert (spec.nnodes, spec.slots_per_node, spec.nslots) == (4, 1, 4)
    assert (spec.cores_per_slot, spec.gpus_per_slot) == (2, 0)
    assert (spec.per_slot, spec.ntasks) == (1, 4)
    assert spec.exclusive is False
    assert spec.duration == 3600.0
    assert spec.cwd == "/home/flux"
    assert spec.queue == "batch"
    assert spec.environment == {"HOME": "/home/flux"}
    assert spec.dependencies == [{"scheme": "afterok", "value": "ƒ2"}]
    assert spec.shell_options == {"verbose": 1}
    assert spec.name == "app"


def test_accessors_slot_core_gpu_and_defaults() -> None:
    doc = slot_only()
    del system(doc)["cwd"]
    del system(doc)["environment"]
    task(doc)["count"] = {"total": 7}
    task(doc)["command"] = ["/usr/bin/hostname", "-f"]
    system(doc)["duration"] = 60
    spec = jobspec.loads(jobspec.dumps(doc))
    assert (spec.nnodes, spec.slots_per_node, spec.nslots) == (None, 10, 10)
    assert (spec.cores_per_slot, spec.gpus_per_slot) == (2, 1)
    assert (spec.per_slot, spec.ntasks) == (None, 7)
    assert spec.exclusive is False
    assert spec.duration == 60.0
    assert isinstance(spec.duration, float)
    assert (spec.cwd, spec.queue) == (None, None)
    assert spec.environment == {}
    assert spec.dependencies == []
    assert spec.shell_options == {}
    assert spec.name == "hostname"


def test_gpu_first_is_read_by_type() -> None:
    doc = slot_only()
    doc["resources"][0]["with"].reverse()
    spec = jobspec.loads(jobspec.dumps(doc))
    assert (spec.cores_per_slot, spec.gpus_per_slot) == (2, 1)


def test_exclusive_reads_the_node_flag() -> None:
    assert jobspec.loads(jobspec.dumps(edited(lambda d: node(d).update(exclusive=True)))).exclusive
    assert not jobspec.loads(
        jobspec.dumps(edited(lambda d: slot(d).update(exclusive=True)))
    ).exclusive


@pytest.mark.parametrize(
    ("command", "job", "name"),
    [
        (["app"], None, "app"),
        (["/bin/sleep", "1"], None, "sleep"),
        (["./dir/"], None, "./dir/"),  # flux-core keeps a trailing-slash path whole
        (["app"], {"name": "mine"}, "mine"),
        (["app"], {"other": 1}, "app"),
    ],
)
def test_name(command: list[str], job: dict[str, Any] | None, name: str) -> None:
    doc = example()
    task(doc)["command"] = command
    if job is not None:
        system(doc)["job"] = job
    assert jobspec.loads(jobspec.dumps(doc)).name == name


def test_jobspec_wraps_without_copying() -> None:
    doc = example()
    spec = JobspecView(doc)
    assert spec.data is doc
    assert spec == JobspecView(example())
    assert spec != doc
    assert "JobspecView({'version': 1" in repr(spec)
    with pytest.raises(TypeError):
        hash(spec)


def test_import_is_cheap() -> None:
    code = (
        "import sys; import pflux.spec.jobspec; heavy = ('yaml', 'orjson', 'jsonschema'); "
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ------------------------------------------------------------------ properties

text = st.text(max_size=12)
names = st.text(st.characters(codec="utf-8"), min_size=1, max_size=8)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
counts = st.integers(1, 2**63 - 1)


@st.composite
def jobspecs(draw: st.DrawFn) -> dict[str, Any]:
    """Valid version 1 jobspecs of all four graph shapes, with varied attributes."""
    label = draw(names)
    children: list[dict[str, Any]] = [{"type": "core", "count": draw(counts)}]
    if draw(st.booleans()):
        children.append({"type": "gpu", "count": draw(st.integers(0, 2**63 - 1))})
        if draw(st.booleans()):
            children.reverse()
    for child in children:
        if draw(st.booleans()):
            child["unit"] = draw(text)
    top: dict[str, Any] = {"type": "slot", "count": draw(counts), "label": label, "with": children}
    if draw(st.booleans()):
        top["exclusive"] = draw(st.booleans())
    if draw(st.booleans()):
        top = {"type": "node", "count": draw(counts), "with": [top]}
        if draw(st.booleans()):
            top["exclusive"] = draw(st.booleans())
    count = {draw(st.sampled_from(["per_slot", "total"])): draw(counts)}
    duration = draw(st.integers(0, 2**63 - 1) | st.floats(0, allow_infinity=False))
    system: dict[str, Any] = {"duration": duration}
    optional = {
        "cwd": text,
        "queue": text,
        "environment": st.dictionaries(names, text, max_size=4),
        "constraints": st.dictionaries(text, json_values, max_size=2),
        "dependencies": st.lists(
            st.fixed_dictionaries(
                {"scheme": text, "value": text}, optional={"type": text, "n": json_values}
            ),
            max_size=2,
        ),
        "shell": st.fixed_dictionaries(
            {},
            optional={  # free-form values under the two options that are mappings
                "options": st.dictionaries(
                    st.sampled_from(["output", "input"]),
                    st.dictionaries(text, json_values, max_size=2),
                    max_size=2,
                )
            },
        ),
        "job": st.fixed_dictionaries({}, optional={"name": text}),
        "bank": json_values,
    }
    for key, strategy in optional.items():
        if draw(st.booleans()):
            system[key] = draw(strategy)
    attributes: dict[str, Any] = {"system": system}
    if draw(st.booleans()):
        attributes["user"] = draw(st.dictionaries(text, json_values, max_size=3))
    command = draw(st.lists(text, min_size=1, max_size=4))
    return {
        "version": 1,
        "resources": [top],
        "tasks": [{"command": command, "slot": label, "count": count}],
        "attributes": attributes,
    }


@settings(max_examples=100)
@given(jobspecs())
def test_generated_jobspecs_validate_and_round_trip(doc: dict[str, Any]) -> None:
    spec = jobspec.loads(jobspec.dumps(doc))
    assert spec.data == doc
    assert jobspec.loads(jobspec.dumps(spec)) == spec
    assert jobspec.decode(jobspec.dumps_yaml(spec), fmt="yaml") == doc
    slot_vertex = (
        doc["resources"][0]
        if doc["resources"][0]["type"] == "slot"
        else doc["resources"][0]["with"][0]
    )
    assert spec.nslots == slot_vertex["count"] * (spec.nnodes or 1)
    assert spec.ntasks == doc["tasks"][0]["count"].get("total", spec.nslots * (spec.per_slot or 0))


RFC_SCHEMA = jsonschema.Draft7Validator(
    json.loads(resources.files("pflux.spec").joinpath("jobspec_v1.schema.json").read_text())
)


def within_rfc_schema(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` less what pflux accepts beyond the RFC's schema: node ``exclusive``, gpu count 0."""
    doc = copy.deepcopy(doc)
    top = doc["resources"][0]
    if top["type"] == "node":
        top.pop("exclusive", None)
    slot_vertex = top["with"][0] if top["type"] == "node" else top
    for child in slot_vertex["with"]:
        if child["type"] == "gpu":
            child["count"] = max(child["count"], 1)
    return doc


@settings(max_examples=60)
@given(jobspecs())
def test_accepted_jobspecs_satisfy_the_rfc_schema(doc: dict[str, Any]) -> None:
    # pflux is at least as strict as RFC 25's own schema, bar the two documented exceptions
    assert RFC_SCHEMA.is_valid(within_rfc_schema(doc))


def locations(doc: dict[str, Any]) -> list[tuple[tuple[str | int, ...], str]]:
    """Where a generated jobspec can be broken, and how: (path, kind)."""
    top = doc["resources"][0]
    found: list[tuple[tuple[str | int, ...], str]] = [
        (("version",), "required"),
        (("resources",), "required"),
        (("tasks",), "required"),
        (("attributes",), "required"),
        (("attributes", "system"), "required"),
        (("attributes", "system", "duration"), "number"),
        (("tasks", 0, "command"), "required"),
        (("tasks", 0, "slot"), "string"),
        (("tasks", 0, "count"), "required"),
        (("tasks", 0, "count", next(iter(doc["tasks"][0]["count"]))), "task count"),
        (("resources", 0, "type"), "required"),
        (("resources", 0, "count"), "count"),
        (("resources", 0, "with"), "required"),
    ]
    slot_path: tuple[str | int, ...] = ("resources", 0)
    if top["type"] == "node":
        slot_path = ("resources", 0, "with", 0)
        found += [((*slot_path, "count"), "count"), ((*slot_path, "with"), "required")]
    found.append(((*slot_path, "label"), "string"))
    vertex = top if top["type"] == "slot" else top["with"][0]
    for i, child in enumerate(vertex["with"]):
        if child["type"] == "core":
            found.append(((*slot_path, "with", i, "count"), "count"))
    return found


def path_text(path: tuple[str | int, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


BAD_VALUES = {
    "count": st.sampled_from([0, -1, True, 1.5, "1", None, [1]]),
    "task count": st.sampled_from([0, -1, True, 1.5, "1", None, [1]]),
    "string": st.sampled_from([1, None, True, ["x"], {"a": "b"}]),
    "number": st.sampled_from(["1h", None, True, -1, [], math.inf]),
}


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(jobspecs(), st.data())
def test_mutated_jobspecs_are_rejected_at_the_mutated_path(
    doc: dict[str, Any], data: st.DataObject
) -> None:
    path, kind = data.draw(st.sampled_from(locations(doc)))
    parent: Any = doc
    for part in path[:-1]:
        parent = parent[part]
    # deleting per_slot or total leaves an empty count, reported at the count itself
    if kind == "required" or (kind != "task count" and data.draw(st.booleans())):
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(BAD_VALUES[kind])
    with pytest.raises(JobspecError) as info:
        jobspec.validate(doc)
    assert path_text(path) in [p for p, _ in info.value.problems]


def outcome(func: Callable[[], object]) -> list[tuple[str, str]] | None:
    """The problems ``func`` raised as JobspecError, or None if it succeeded."""
    try:
        func()
    except JobspecError as exc:
        return exc.problems
    return None


def well_formed(problems: list[tuple[str, str]] | None) -> bool:
    return problems is None or (
        all(isinstance(p, str) and isinstance(m, str) and m for p, m in problems) and bool(problems)
    )


@settings(max_examples=200)
@given(st.binary(max_size=200) | st.text(max_size=200))
def test_loads_of_arbitrary_input_raises_only_jobspec_error(data: bytes | str) -> None:
    assert well_formed(outcome(lambda: jobspec.loads(data)))


yamlish = st.text(st.sampled_from(list("{}[]:,-#&*!|>'\"%@` \n\tab1.?~")), max_size=60)


@settings(max_examples=200)
@given(yamlish)
def test_loads_of_yaml_like_text_raises_only_jobspec_error(data: str) -> None:
    assert well_formed(outcome(lambda: jobspec.loads(data)))


any_values = st.recursive(
    json_scalars | st.floats() | st.integers() | st.tuples(st.integers()) | st.binary(max_size=2),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(text | st.integers(), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(jobspecs(), st.data())
def test_validate_of_damaged_jobspecs_raises_only_jobspec_error(
    doc: dict[str, Any], data: st.DataObject
) -> None:
    # replace one value anywhere with anything; whatever validates must encode and round-trip
    parents: list[Any] = []
    stack: list[Any] = [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, dict | list) and item:
            parents.append(item)
            stack.extend(item.values() if isinstance(item, dict) else item)
    parent = data.draw(st.sampled_from(parents))
    key = data.draw(
        st.sampled_from(list(parent) if isinstance(parent, dict) else range(len(parent)))
    )
    parent[key] = data.draw(any_values)
    problems = outcome(lambda: jobspec.validate(doc))
    assert well_formed(problems)
    if problems is None:
        assert jobspec.loads(jobspec.dumps(doc)).data == doc
        assert RFC_SCHEMA.is_valid(within_rfc_schema(doc))


@settings(max_examples=100)
@given(any_values)
def test_validate_of_arbitrary_values_raises_only_jobspec_error(value: object) -> None:
    with pytest.raises(JobspecError):
        jobspec.validate(value)


@settings(max_examples=50)
@given(jobspecs())
def test_decode_and_validate_agree_on_yaml_and_json(doc: dict[str, Any]) -> None:
    assert jobspec.loads(jobspec.dumps_yaml(doc)) == jobspec.loads(jobspec.dumps(doc))


# ------------------------------------------------------------ the fast path
#
# validate asks a pathless fast check (accept.accepts) before the walker
# (walker.collect). It may only ever accept what the walker accepts; these
# pin that, and that the shapes pflux itself writes take it.


class Int(int):
    pass


class Text(str):
    pass


class Dict(dict[Any, Any]):
    pass


class List(list[Any]):
    pass


class Count(enum.IntEnum):
    ONE = 1


class Sly:
    """Equal to everything: the fast path must not trust a stranger's ``==``."""

    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = object.__hash__


ODD = (
    [0, -1, 2**63, 2**64, True, False, 1.0, -0.0, math.nan, math.inf, -math.inf, "", "\ud800",
     "é", "x", None, [], {}, (), b"x", Count.ONE, Int(1), Text("x"), Sly(), [Sly()], {"k": Sly()}]
)  # fmt: skip
ODD_VALUES = st.sampled_from(ODD)


def retyped(value: object) -> object:
    """The same value under a subclass or a look-alike type, which only the walker may judge."""
    if type(value) is dict:
        return Dict(value)
    if type(value) is list:
        return List(value) if value else ()
    if type(value) is str:
        return Text(value)
    if type(value) is int:
        return Int(value)
    if type(value) is float:
        return Int(int(value)) if math.isfinite(value) else value
    return value


def places(doc: object) -> list[tuple[Any, Any]]:
    """Every (container, key or index) in ``doc``."""
    found: list[tuple[Any, Any]] = []
    stack = [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            found += [(item, key) for key in item]
            stack.extend(item.values())
        elif isinstance(item, list):
            found += [(item, i) for i in range(len(item))]
            stack.extend(item)
    return found


def damage(doc: dict[str, Any], data: st.DataObject) -> None:
    """One change anywhere: a value replaced or retyped, a key removed or added."""
    parent, key = data.draw(st.sampled_from(places(doc)))
    how = data.draw(st.sampled_from(["odd", "any", "retype", "delete", "add"]))
    if how == "odd":
        parent[key] = data.draw(ODD_VALUES)
    elif how == "any":
        parent[key] = data.draw(any_values)
    elif how == "retype":
        parent[key] = retyped(parent[key])
    elif how == "delete":
        del parent[key]
    elif isinstance(parent, dict):
        extra = st.sampled_from(["unit", "exclusive", "label", "with", "system", "user", "x"])
        parent[data.draw(extra)] = data.draw(ODD_VALUES | json_values)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(jobspecs(), st.data())
def test_fast_path_accepts_only_what_the_walker_accepts(
    doc: dict[str, Any], data: st.DataObject
) -> None:
    for _ in range(data.draw(st.integers(0, 3))):
        if places(doc):
            damage(doc, data)
    found = walker.collect(doc)
    if accept.accepts(doc):
        assert found == []
    # and so validate says what the walker says, problem for problem
    assert outcome(lambda: jobspec.validate(doc)) == (found or None)


def single_changes(base: dict[str, Any]) -> list[dict[str, Any]]:
    """``base`` changed once in every way: each place set to each odd value, retyped, deleted."""
    changed = []
    for index in range(len(places(base))):
        for value in [*ODD, retyped, DELETE]:
            doc = copy.deepcopy(base)
            parent, key = places(doc)[index]
            if value is DELETE:
                del parent[key]
            else:
                parent[key] = value(parent[key]) if value is retyped else value
            changed.append(doc)
    for index in range(len(places(base))):
        for name in ("unit", "exclusive", "label", "with", "total", "system", "user", "x"):
            for value in (1, "x", True, Sly()):
                doc = copy.deepcopy(base)
                parent, key = places(doc)[index]
                if isinstance(parent[key], dict):
                    parent[key][name] = value
                    changed.append(doc)
    return changed


@pytest.mark.parametrize(("case", "bare"), [("example", False), ("2.3", False), ("2.4", True)])
def test_fast_path_accepts_no_single_change_that_the_walker_rejects(case: str, bare: bool) -> None:
    base = example(case)
    base["resources"][0]["exclusive"] = False
    if bare:  # duration alone in system
        del system(base)["cwd"], system(base)["environment"]
    for doc in single_changes(base):
        if accept.accepts(doc):
            assert walker.collect(doc) == [], doc


def limited(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with the shell options ``pflux submit`` writes by default: resource limits."""
    system(doc)["shell"] = {"options": {"rlimit": {"nofile": 1024, "core": 0, "cpu": -1}}}
    return doc


def test_fast_path_checks_resource_limits_itself() -> None:
    # the walker's check of shell options is not asked for the limits alone
    def walked(value: object, path: str, problems: walker.Problems) -> None:
        raise AssertionError(f"the walker checked {path}")

    with mock.patch.dict(walker.SYSTEM_CHECKS, shell=walked):
        assert accept.accepts(limited(example("example")))


def test_fast_path_accepts_no_single_change_to_resource_limits_that_the_walker_rejects() -> None:
    for doc in single_changes(limited(example("example"))):
        if accept.accepts(doc):
            assert walker.collect(doc) == [], doc


@pytest.mark.parametrize("size", [99_992, 99_993, 99_994])
def test_resource_limits_count_against_the_size_budget(size: int) -> None:
    # a list of 99,993 values (and itself) and the limits' shell options (6 values) fill it
    doc = limited(edited(lambda d: system(d).update(x=list(range(size)))))
    found = walker.collect(doc)
    assert bool(found) == (size > 99_993)
    assert accept.accepts(doc) == (not found)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(
            lambda d: (slot(d).update(label="\ud800"), task(d).update(slot="\ud800")), id="label"
        ),
        pytest.param(lambda d: task(d).update(command=["\udc00"]), id="command"),
        pytest.param(lambda d: system(d).update(cwd="\ud800"), id="cwd"),
        pytest.param(lambda d: system(d)["environment"].update({"\ud800": "x"}), id="env name"),
        pytest.param(lambda d: system(d)["environment"].update(X="\ud800"), id="env value"),
        pytest.param(lambda d: system(d).update(shell={"options": {"\ud800": 1}}), id="shell key"),
        pytest.param(lambda d: system(d).update(shell={"options": {"x": 1e400}}), id="infinity"),
    ],
)
def test_lone_surrogates_and_infinities_are_left_to_the_walker(
    change: Callable[[dict[str, Any]], object],
) -> None:
    doc = edited(change)
    assert not accept.accepts(doc)
    assert problems_of(doc)


@pytest.mark.parametrize("case", ["example", "1.1", "2.1", "2.2", "2.3", "2.4"])
def test_fast_path_takes_rfc_examples(case: str) -> None:
    assert accept.accepts(example(case))


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"num_tasks": 4, "cores_per_task": 2},
        {"num_tasks": 5, "num_nodes": 2, "exclusive": True},
        {"num_tasks": 2, "gpus_per_task": 1, "duration": 60.5},
        {"environment": {"HOME": "/home/é", "PATH": "/bin"}, "cwd": "/tmp", "name": "x"},
        {"queue": "batch", "output": "out.{{id}}", "unbuffered": True, "bank": "b"},
    ],
)
def test_fast_path_takes_what_pflux_submit_writes(options: dict[str, Any]) -> None:
    doc = builder.from_command(["app", "-v"], **options)
    builder.set_shell_option(doc, "rlimit", {"nofile": 1024, "core": 0})
    builder.set_attr(doc, "system.dependencies", [{"scheme": "afterok", "value": "ƒ2"}])
    assert accept.accepts(doc)


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda d: core(d).update(unit="GB"), id="unit"),
        pytest.param(lambda d: d["tasks"].append(Dict(d["tasks"].pop())), id="dict subclass"),
        pytest.param(lambda d: d.update(resources=List(d["resources"])), id="list subclass"),
    ],
)
def test_fast_path_leaves_rarer_valid_shapes_to_the_walker(
    change: Callable[[dict[str, Any]], object],
) -> None:
    doc = edited(change)
    assert not accept.accepts(doc)
    jobspec.validate(doc)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(jobspecs(), st.data())
def test_shortcuts_inside_the_walker_change_nothing(
    doc: dict[str, Any], data: st.DataObject
) -> None:
    # _plain_data and texts spare the walker its loops on plain data; without them it
    # must find exactly the same problems
    for _ in range(data.draw(st.integers(0, 3))):
        if places(doc):
            damage(doc, data)
    with_shortcuts = walker.collect(doc)
    with (
        mock.patch.object(walker, "_plain_data", return_value=-1),
        mock.patch.object(walker, "texts", return_value=False),
    ):
        assert walker.collect(doc) == with_shortcuts


def test_free_form_values_share_one_size_budget() -> None:
    big = list(range(60_000))
    doc = edited(lambda d: (d["attributes"].update(user={"a": big}), system(d).update(x=big)))
    assert problems_of(doc)[-1][1] == "too large: more than 100000 values"
    jobspec.validate(edited(lambda d: d["attributes"].update(user={"a": big})))
