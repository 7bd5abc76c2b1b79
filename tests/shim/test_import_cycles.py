"""The flux package's modules import each other in no circle: a module that runs
when it is imported (its top level, ``TYPE_CHECKING`` blocks included) imports only
modules that import it in no way back. A function's own import (what it needs at call
time only) is not counted."""

from __future__ import annotations

import ast
from pathlib import Path

from support.shim import SHIM_PYTHON

PACKAGE = SHIM_PYTHON / "flux"


def _module_name(path: Path) -> str:
    parts = path.relative_to(SHIM_PYTHON).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The imports run when the module is: its statements and those nested in its
    blocks and classes, not in functions."""
    found: list[ast.Import | ast.ImportFrom] = []
    pending: list[ast.AST] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            pending.extend(ast.iter_child_nodes(node))
    return found


def _imported(module: str, path: Path) -> set[str]:
    """The modules of the package ``module`` imports at its top level: ``from X import
    y`` names the module ``X.y`` where there is one, else ``X``."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets: set[str] = set()
    for node in _top_level_imports(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
            continue
        base = node.module or ""
        if node.level:
            parts = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*parts, *([node.module] if node.module else [])])
        for alias in node.names:
            targets.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
    return {name for name in targets if name in MODULES and name != module}


GRAPH = {module: _imported(module, path) for module, path in MODULES.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of imports in ``graph`` (its modules in order, the first again at the
    end), or None."""
    state: dict[str, int] = {}  # 1: on the path being walked, 2: done
    for start in sorted(graph):
        if start in state:
            continue
        path = [start]
        state[start] = 1
        stack = [iter(sorted(graph[start]))]
        while stack:
            following = next(stack[-1], None)
            if following is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(following) == 1:
                return [*path[path.index(following) :], following]
            elif following not in state:
                state[following] = 1
                path.append(following)
                stack.append(iter(sorted(graph[following])))
    return None


def test_the_modules_and_their_imports_are_found() -> None:
    assert {"flux", "flux.core.handle", "flux.job.Jobspec", "flux.uri"} <= GRAPH.keys()
    assert "flux.constants" in GRAPH["flux.core.handle"]
    assert "flux.uri.uri" in GRAPH["flux.uri"]


def test_a_circle_is_found_where_there_is_one() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set()}
    assert _cycle(graph) == ["a", "b", "c", "a"]
    assert _cycle({**graph, "c": {"d"}}) is None


def test_the_package_imports_no_module_in_a_circle() -> None:
    cycle = _cycle(GRAPH)
    assert cycle is None, " imports ".join(cycle)
