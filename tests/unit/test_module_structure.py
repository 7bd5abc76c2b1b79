"""The package's shape: parts of a service reach it through narrow protocols, not by
importing it (no import cycle goes through a service), and each public class name is
defined once, so a name says which thing it is."""

from __future__ import annotations

import ast
from collections import Counter
from functools import cache
from pathlib import Path

import pflux

ROOT = Path(pflux.__file__).parent
# the ``flux`` package shipped inside pflux for tools: flux-core's names, not pflux's modules

# the parts that call back into their service, each through a protocol of its own
SERVICE_PARTS = (
    "pflux.manager.alloc",
    "pflux.manager.start",
    "pflux.manager.journal",
    "pflux.manager.quiescent",
    "pflux.exec.job",
    "pflux.exec.shellrun",
    "pflux.exec.takeover",
    "pflux.exec.writes",
    "pflux.exec.testexec",
    "pflux.exec.leftovers",
)


# the flux package pflux ships for tools: flux-core's names, no module of pflux's
SHIM = ROOT / "fluxshim" / "python"


@cache
def _modules() -> dict[str, tuple[Path, ast.Module]]:
    """Every module of pflux, parsed once for all the checks here."""
    found = {}
    for path in ROOT.rglob("*.py"):
        if path.is_relative_to(SHIM):
            continue
        parts = ["pflux", *path.relative_to(ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = (path, ast.parse(path.read_text()))
    return found


@cache
def _cycles_found() -> tuple[frozenset[str], ...]:
    return tuple(frozenset(cycle) for cycle in _cycles(_imports(_modules())))


def _imports(modules: dict[str, tuple[Path, ast.Module]]) -> dict[str, set[str]]:
    """Each module's imports of other pflux modules, wherever they are (type-checking
    blocks and functions included): a cycle of any of them is a tangle to read."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, tree) in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    targets.append(full if full in modules else base)
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in graph[node]:
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in graph:
        if node not in index:
            visit(node)
    return found


def _defines_service(tree: ast.Module) -> bool:
    return any(
        isinstance(node, ast.ClassDef)
        and any(isinstance(b, ast.Name) and b.id == "Service" for b in node.bases)
        for node in tree.body
    )


def test_no_import_cycle_goes_through_a_service_or_its_parts() -> None:
    modules = _modules()
    services = {name for name, (_, tree) in modules.items() if _defines_service(tree)}
    assert {"pflux.manager.service", "pflux.exec.service"} <= services
    tangled = [
        sorted(cycle)
        for cycle in _cycles_found()
        if cycle & services or cycle.intersection(SERVICE_PARTS)
    ]
    assert tangled == []


def test_the_top_level_holds_the_facade_the_errors_and_packages() -> None:
    """Every module has the home of the part that uses it: at the top of ``pflux``
    only the public names (``__init__``), the one exception tree, the finder of
    ``_pfluxcore`` (which ``import pflux`` installs before any other pflux module
    loads, and which must not pull a package's ``__init__`` in with it), and packages."""
    kept = ("__init__.py", "errors.py", "_corefinder.py", "py.typed")
    loose = sorted(path.name for path in ROOT.iterdir() if path.is_file() and path.name not in kept)
    assert loose == []


def test_no_import_cycle_goes_through_the_api() -> None:
    """The clients import job handles, and job handles ask of a client only through
    a protocol of their own: no module of ``pflux.api`` is in a cycle."""
    api = {name for name in _modules() if name == "pflux.api" or name.startswith("pflux.api.")}
    tangled = [sorted(cycle) for cycle in _cycles_found() if cycle & api]
    assert tangled == []


def test_each_public_class_name_is_defined_once() -> None:
    names = Counter(
        node.name
        for _, tree in _modules().values()
        for node in tree.body
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_")
    )
    assert [name for name, count in names.items() if count > 1] == []
