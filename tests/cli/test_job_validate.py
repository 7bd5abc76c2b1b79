"""``pflux job validate``, through the real console script."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from support.instance import console

CORPUS = Path(__file__).resolve().parents[1] / "data" / "jobspec"

VALID_JSON = (
    '{"version":1,"resources":[{"type":"slot","count":1,"label":"task",'
    '"with":[{"type":"core","count":1}]}],"tasks":[{"command":["true"],"slot":"task",'
    '"count":{"per_slot":1}}],"attributes":{"system":{"duration":0}}}'
)


def validate(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return console("job", "validate", *args, stdin=stdin)


def test_valid_corpus_prints_ok() -> None:
    files = sorted(str(p) for p in (CORPUS / "valid").glob("*.yaml"))
    assert files
    result = validate(*files)
    assert result.returncode == 0
    assert result.stdout.splitlines() == [f"{name}: ok" for name in files]
    assert result.stderr == ""


def test_invalid_corpus_prints_every_problem_with_its_path() -> None:
    files = sorted(str(p) for p in (CORPUS / "invalid").glob("*.yaml"))
    assert files
    result = validate(*files)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    reported = {line.split(": ", 1)[0] for line in lines}
    assert reported == set(files)  # every file has at least one problem line
    assert f"{CORPUS}/invalid/v1_version_wrong.yaml: version: must be 1, got 2" in lines
    assert (
        f"{CORPUS}/invalid/invalid_yaml1.yaml: "
        "invalid YAML at line 1, column 9: mapping values are not allowed in this context"
    ) in lines
    assert not any(line.endswith(": ok") for line in lines)


def test_mixed_files_exit_1_and_report_each(tmp_path: Path) -> None:
    good = tmp_path / "good.json"
    good.write_text(VALID_JSON)
    bad = tmp_path / "bad.yaml"
    bad.write_text((CORPUS / "valid" / "example1.yaml").read_text().replace("count: 2", "count: 0"))
    result = validate(str(good), str(bad))
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f"{good}: ok",
        f"{bad}: resources[0].with[0].with[0].count: must be an integer >= 1, got 0",
    ]


def test_stdin() -> None:
    result = validate("-", stdin=VALID_JSON)
    assert (result.returncode, result.stdout) == (0, "stdin: ok\n")
    yaml_text = (CORPUS / "valid" / "use_case_2.3.yaml").read_text()
    assert validate("-", stdin=yaml_text).stdout == "stdin: ok\n"
    result = validate("-", stdin='{"version": 1,')
    assert result.returncode == 1
    assert result.stdout.startswith("stdin: invalid JSON at line 1, column 15: ")


def test_missing_file_is_an_error_and_the_rest_still_run(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    good = tmp_path / "good.json"
    good.write_text(VALID_JSON)
    result = validate(str(missing), str(good), str(tmp_path))
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f"{missing}: ERROR: No such file or directory",
        f"{good}: ok",
        f"{tmp_path}: ERROR: Is a directory",
    ]


def test_format_option(tmp_path: Path) -> None:
    flow = tmp_path / "flow.yaml"
    flow.write_text(
        "{version: 1, resources: [{type: slot, count: 1, label: t,"
        " with: [{type: core, count: 1}]}], tasks: [{command: [a], slot: t,"
        " count: {total: 1}}], attributes: {system: {duration: 1}}}"
    )
    assert validate(str(flow)).stdout.startswith(f"{flow}: invalid JSON at line 1")
    assert validate("--format=yaml", str(flow)).stdout == f"{flow}: ok\n"
    result = validate("--format", "json", str(CORPUS / "valid" / "example1.yaml"))
    assert result.returncode == 1
    assert "invalid JSON at line 1, column 1" in result.stdout


@pytest.mark.parametrize("args", [(), ("--bogus", "x.yaml"), ("--format=toml", "x.yaml")])
def test_usage_errors_exit_2(args: tuple[str, ...]) -> None:
    result = validate(*args)
    assert result.returncode == 2
    assert result.stdout == ""
    assert "usage: pflux job validate" in result.stderr


def test_help() -> None:
    result = validate("--help")
    assert result.returncode == 0
    assert "FILE" in result.stdout
