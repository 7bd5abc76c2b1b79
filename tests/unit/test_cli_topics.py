"""The CLI speaks to an instance only through the public API (pflux.api), never by
topic: no module under pflux/cli names an RPC topic of docs/interfaces.md."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pflux.cli

CLI = Path(pflux.cli.__file__).parent
DOC = Path(__file__).parents[2] / "docs" / "interfaces.md"
TOPICS = set(re.findall(r"^\| `([a-z][a-z0-9-]*\.[a-z0-9.-]+)`", DOC.read_text(), re.MULTILINE))
#: the raw connections, which only the public API uses
CONNECTIONS = {"pflux.client.handle", "pflux.client.aio"}


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the docstring nodes."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def topics_named(path: Path) -> set[str]:
    """The documented topics that are whole string literals of ``path`` (a message may
    quote one, a docstring may name one)."""
    tree = ast.parse(path.read_text())
    docstrings = _docstrings(tree)
    strings = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]
    return TOPICS.intersection(strings)


def test_the_documented_topics_are_found() -> None:
    assert {"job-list.list", "kvs.get", "job-manager.raise", "broker.attrs"} <= TOPICS


def test_no_cli_module_names_a_topic() -> None:
    naming = {path.name: topics_named(path) for path in sorted(CLI.glob("*.py"))}
    offenders = {name: topics for name, topics in naming.items() if topics}
    assert offenders == {}, "use pflux.api's Client instead"


def test_a_topic_in_code_is_found(tmp_path: Path) -> None:
    source = tmp_path / "x.py"
    source.write_text('"""job-exec.stdin in a docstring"""\nh.rpc("job-exec.stdin", {})\n')
    assert topics_named(source) == {"job-exec.stdin"}
    source.write_text('"""job-exec.stdin in a docstring only"""\n')
    assert topics_named(source) == set()


def imported(path: Path) -> set[str]:
    """The modules ``path`` imports, anywhere in it."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_no_cli_module_opens_a_raw_connection() -> None:
    opening = {path.name for path in CLI.glob("*.py") if imported(path) & CONNECTIONS}
    assert opening == set(), "use pflux.api's Client instead"


def test_every_api_name_the_cli_imports_is_a_public_name() -> None:
    """What the CLI takes from the API's modules is reachable as ``pflux.NAME`` too."""
    import pflux

    taken = {
        (path.name, alias.name)
        for path in CLI.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom)
        and (node.module == "pflux.api" or (node.module or "").startswith("pflux.api."))
        for alias in node.names
    }
    assert taken
    assert sorted(entry for entry in taken if entry[1] not in pflux.__all__) == []
