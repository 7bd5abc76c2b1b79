"""The import rules of the package layout, read from every module's imports.

Services talk only through messages, so no service package imports another;
what several of them share (RFC 21's states, results and replay, RFC 16's keys)
lives in ``pflux.spec``, pure and I/O-free, or in ``pflux.broker``'s request
helpers. Every import counts, those inside functions too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pflux

ROOT = Path(pflux.__file__).parent

#: the service packages
SERVICES = frozenset(
    ("exec", "info", "ingest", "joblist", "kvs", "manager", "rexec", "sched", "shell", "sim")
)

#: (importer, imported) service edges kept on purpose, each with its reason
ALLOWED = {
    ("sim", "sched"): "the offline replay runs the scheduler's own pool and policy",
    ("sim", "exec"): "the simulator stands in for job-exec: its test-mode run and notes",
}


def _module_name(path: Path) -> str:
    parts = ["pflux", *path.relative_to(ROOT).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every pflux module ``path`` imports, at any depth, relative imports resolved."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return {name for name in found if name == "pflux" or name.startswith("pflux.")}


def _top(name: str) -> str | None:
    """The first component below ``pflux`` of a module name."""
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else None


MODULES = {_module_name(path): _imports(path) for path in sorted(ROOT.rglob("*.py"))}


def test_the_modules_are_found() -> None:
    assert {"pflux.spec.states", "pflux.manager.service", "pflux.cli"} <= MODULES.keys()
    assert "pflux.spec.states" in MODULES["pflux.manager.service"]


def test_nothing_outside_the_job_manager_imports_it() -> None:
    reaching = sorted(
        f"{module} imports {name}"
        for module, names in MODULES.items()
        if _top(module) != "manager"
        for name in names
        if _top(name) == "manager"
    )
    assert reaching == []


def test_no_service_imports_another() -> None:
    crossing = sorted(
        f"{module} imports {name}"
        for module, names in MODULES.items()
        if _top(module) in SERVICES
        for name in names
        if _top(name) in SERVICES
        and _top(name) != _top(module)
        and (_top(module), _top(name)) not in ALLOWED
    )
    assert crossing == []


@pytest.mark.parametrize("edge", sorted(ALLOWED))
def test_each_allowed_edge_is_still_needed(edge: tuple[str, str]) -> None:
    importer, imported = edge
    assert any(
        _top(name) == imported
        for module, names in MODULES.items()
        if _top(module) == importer
        for name in names
    ), f"{importer} no longer imports {imported}: drop it from ALLOWED"


def test_the_spec_libraries_import_only_themselves() -> None:
    """``pflux.spec`` is pure: it needs nothing but itself and the error types."""
    impure = sorted(
        f"{module} imports {name}"
        for module, names in MODULES.items()
        if _top(module) == "spec"
        for name in names
        if _top(name) not in ("spec", "errors") and name != "pflux"
    )
    assert impure == []


def test_the_safe_file_helpers_import_nothing_of_pflux() -> None:
    """``pflux.safefs`` serves job-exec, the job shell and ``pflux start`` alike, so it
    depends on none of them."""
    reaching = sorted(
        f"{module} imports {name}"
        for module, names in MODULES.items()
        if _top(module) == "safefs"
        for name in names
        if _top(name) not in ("safefs", None)
    )
    assert reaching == []
