"""RFC 25's own examples (tests/data/rfc25) and flux-core's jobspec corpus (tests/data/jobspec)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pflux.errors import JobspecError
from pflux.spec import jobspec
from pflux.spec.jobspec import accept
from support import rfc25

CORPUS = Path(__file__).resolve().parents[1] / "data" / "jobspec"

# what each of RFC 25's examples asks for: (nnodes, nslots, cores/slot, gpus/slot, ntasks, name)
RFC_EXPECTED = {
    "example": (4, 4, 2, 0, 4, "app"),
    "1.1": (4, 4, 1, 0, 4, "flux"),
    "2.1": (4, 4, 1, 0, 5, "hostname"),
    "2.2": (None, 10, 2, 0, 10, "myapp"),
    "2.3": (None, 10, 2, 1, 10, "myapp"),
    "2.4": (4, 16, 1, 1, 16, "myapp"),
}

# invalid file -> the path (or path prefix) a problem must name; "" is the document
INVALID = {
    "attributes_bad_entry": "attributes.foo",
    "attributes_not_mapping": "attributes",
    "attributes_null": "attributes",
    "constraints_not_object": "attributes.system.constraints",
    "dependencies_not_array": "attributes.system.dependencies",
    "dependency_invalid": "attributes.system.dependencies[0].value",
    "invalid_yaml1": "",
    "missing_attributes": "attributes",
    "missing_resources": "resources",
    "missing_tasks": "tasks",
    "missing_version": "version",
    "resource_count_bad_exp_min": "resources[0].count",
    "resource_count_bad_mult_operand": "resources[0].count",
    "resource_count_bad_operator": "resources[0].count",
    "resource_count_bad_type": "resources[0].count",
    "resource_count_is_zero": "resources[0].count",
    "resource_count_max_lessthan_min": "resources[0].count",
    "resource_count_min_is_zero": "resources[0].count",
    "resource_count_min_not_int": "resources[0].count",
    "resource_count_missing_min": "resources[0].count",
    "resource_count_missing_operand": "resources[0].count",
    "resource_count_missing_operator": "resources[0].count",
    "resource_count_negative": "resources[0].with[0].count",
    "resource_count_operand_is_zero": "resources[0].count",
    "resource_count_operator_not_char": "resources[0].count",
    "resource_count_scalar_bad_value": "resources[0].count",
    "resource_exclusive_invalid": "resources[0].with[0].exclusive",
    "resource_exclusive_not_scalar": "resources[0].exclusive",
    "resource_id_not_scalar": "resources[0].id",
    "resource_label_not_scalar": "resources[0].label",
    "resource_missing_count": "resources[0].with[0]",
    "resource_missing_type": "resources[0].with[0].type",
    "resource_node_with_notarray": "resources[0].with",
    "resource_not_mapping": "resources[0]",
    "resource_slot_not_labelled": "resources[0].label",
    "resource_slot_with_notarray": "resources[0].with",
    "resource_type_not_string": "resources[0].with[0].type",
    "resource_unit_not_scalar": "resources[0].unit",
    "resources_not_sequence": "resources",
    "task_command_array_notstring": "tasks[0].command",
    "task_command_not_array": "tasks[0].command",
    "task_command_zero_length_array": "tasks[0].command",
    "task_count_empty": "tasks[0].count",
    "task_count_not_mapping": "tasks[0].count",
    "task_count_per_slot_zero": "tasks[0].count.per_slot",
    "task_count_total_and_per_slot": "tasks[0].count",
    "task_count_total_zero": "tasks[0].count.total",
    "task_missing_command": "tasks[0].command",
    "task_missing_count": "tasks[0].count",
    "task_missing_slot": "tasks[0].slot",
    "task_not_mapping": "tasks[0]",
    "tasks_not_sequence": "tasks",
    "v1_core_count_invalid": "resources[0].with[0].with[0].count",
    "v1_duration_missing": "attributes.system.duration",
    "v1_gpu_count_invalid": "resources[0].with[0].with[1].count",
    "v1_node_vertex_missing_count": "resources[0].count",
    "v1_node_vertex_with_notarray": "resources[0].with[0].with",
    "v1_node_vertex_with_toomany": "resources[0].with",
    "v1_node_vertex_zero_count": "resources[0].count",
    "v1_res_type_unknown": "resources[0].type",
    "v1_slot_node": "resources[0].with[0].type",
    "v1_task_count_per_resource": "tasks[0].count",
    "v1_version_wrong": "version",
    "v1_with_toomany": "resources[0].with",
    "v1_with_whatnow": "resources[0].with[0].type",
    "version_bad_number": "version",
    "version_is_zero": "version",
    "version_not_scalar": "version",
}


def names(folder: str) -> list[str]:
    return sorted(p.stem for p in (CORPUS / folder).glob("*.yaml"))


def under(path: str, prefix: str) -> bool:
    """Whether ``path`` is ``prefix`` or lies below it."""
    if not prefix:
        return path == ""
    return path == prefix or path.startswith((prefix + ".", prefix + "["))


@pytest.mark.parametrize("name", rfc25.CASES)
def test_rfc_example_validates(name: str) -> None:
    spec = jobspec.loads(rfc25.text(name))
    got = (
        spec.nnodes,
        spec.nslots,
        spec.cores_per_slot,
        spec.gpus_per_slot,
        spec.ntasks,
        spec.name,
    )
    assert got == RFC_EXPECTED[name]
    assert spec.duration == 3600.0
    assert spec.cwd == "/home/flux"
    assert spec.environment == {"HOME": "/home/flux"}


def test_rfc_examples_match_the_corpus() -> None:
    corpus = {
        name: jobspec.decode((CORPUS / "valid" / f"{name}.yaml").read_bytes())
        for name in names("valid")
    }
    assert jobspec.decode(rfc25.text()) == corpus["example1"]
    for case in ("1.1", "2.1", "2.2", "2.3", "2.4"):
        assert jobspec.decode(rfc25.text(case)) == corpus[f"use_case_{case}"]


def test_corpus_is_present() -> None:
    assert len(names("valid")) >= 7
    assert set(names("invalid")) == set(INVALID), "every invalid file needs an expected path"


@pytest.mark.parametrize("name", names("valid"))
def test_valid_corpus(name: str) -> None:
    data = (CORPUS / "valid" / f"{name}.yaml").read_bytes()
    spec = jobspec.loads(data)
    assert spec.data == jobspec.decode(data)
    # and the canonical JSON of each validates too
    assert jobspec.loads(jobspec.dumps(spec)) == spec


@pytest.mark.parametrize("name", names("invalid"))
def test_invalid_corpus_names_the_offending_part(name: str) -> None:
    data = (CORPUS / "invalid" / f"{name}.yaml").read_bytes()
    with pytest.raises(JobspecError) as info:
        jobspec.loads(data)
    if name != "invalid_yaml1":  # the fast path never accepts what the walker rejects
        assert not accept.accepts(jobspec.decode(data))
    paths = [path for path, _ in info.value.problems]
    assert any(under(path, INVALID[name]) for path in paths), paths
    assert all(message for _, message in info.value.problems)


def test_gpu_count_zero_is_accepted() -> None:
    # flux-core accepts it although RFC 25's schema says minimum 1 (spec-notes decision)
    spec = jobspec.loads((CORPUS / "valid" / "gpu_count_zero.yaml").read_bytes())
    assert spec.gpus_per_slot == 0


def test_yaml_syntax_error_names_line_and_column() -> None:
    with pytest.raises(JobspecError) as info:
        jobspec.loads((CORPUS / "invalid" / "invalid_yaml1.yaml").read_bytes())
    assert info.value.problems == [
        ("", "invalid YAML at line 1, column 9: mapping values are not allowed in this context")
    ]


def test_several_problems_are_all_reported() -> None:
    with pytest.raises(JobspecError) as info:
        jobspec.loads((CORPUS / "invalid" / "v1_duration_missing.yaml").read_bytes())
    assert info.value.problems == [
        ("tasks[0].slot", 'must name the slot\'s label "task", got "foo"'),
        ("attributes.system.duration", "required key is missing"),
    ]
