"""The import rules of the package layout, read from every module's imports.

Services talk only through messages, so no service package imports another;
what several of them share (RFC 21's states, results and replay, RFC 16's keys)
lives in ``pflux.spec``, pure and I/O-free, or in ``pflux.broker``'s request
helpers. The wire (``pflux.protocol``) is a leaf the broker, the client and the
services share, so the broker and the client never import each other; the CLI
imports only the facade (``from pflux import Name``), the RFC libraries, the
errors and itself; and no package imports, through others, one that imports it.
Every import counts, those inside functions and TYPE_CHECKING blocks too.
"""

from __future__ import annotations

import ast
import sys
from functools import cache
from pathlib import Path

import pytest

import pflux

ROOT = Path(pflux.__file__).parent

#: the service packages
SERVICES = frozenset(
    ("exec", "info", "ingest", "joblist", "kvs", "manager", "rexec", "sched", "shell", "sim")
)

#: what a CLI module may import: the facade (``from pflux import Name``), the RFC
#: libraries, the exception tree and the CLI's own modules
CLI_MAY_IMPORT = frozenset(("spec", "errors", "cli"))

#: CLI modules that may import more, each with its reason
CLI_EXCEPTIONS = {
    "pflux.cli.start": "pflux start runs an instance: the broker, its configuration and"
    " the log file it opens as a job's output",
    "pflux.cli.keygen": "pflux keygen writes the certificate the broker's overlay reads,"
    " in the broker's own format",
}

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


@cache
def _modules() -> dict[str, set[str]]:
    """Every pflux module's imports, read once when a test first asks (not when the
    tests are collected)."""
    return {_module_name(path): _imports(path) for path in sorted(ROOT.rglob("*.py"))}


def test_the_modules_are_found() -> None:
    assert {"pflux.spec.states", "pflux.manager.service", "pflux.cli"} <= _modules().keys()
    assert "pflux.spec.states" in _modules()["pflux.manager.service"]


def test_nothing_outside_the_job_manager_imports_it() -> None:
    reaching = sorted(
        f"{module} imports {name}"
        for module, names in _modules().items()
        if _top(module) != "manager"
        for name in names
        if _top(name) == "manager"
    )
    assert reaching == []


def test_no_service_imports_another() -> None:
    crossing = sorted(
        f"{module} imports {name}"
        for module, names in _modules().items()
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
        for module, names in _modules().items()
        if _top(module) == importer
        for name in names
    ), f"{importer} no longer imports {imported}: drop it from ALLOWED"


def test_the_spec_libraries_import_only_themselves() -> None:
    """``pflux.spec`` is pure: it needs nothing but itself and the error types."""
    impure = sorted(
        f"{module} imports {name}"
        for module, names in _modules().items()
        if _top(module) == "spec"
        for name in names
        if _top(name) not in ("spec", "errors") and name != "pflux"
    )
    assert impure == []


def _outside(package: str, allowed: set[str]) -> list[str]:
    """Each import by a module of ``package`` of a pflux package not in ``allowed``."""
    return sorted(
        f"{module} imports {name}"
        for module, names in _modules().items()
        if _top(module) == package
        for name in names
        if name != "pflux" and _top(name) not in allowed
    )


def _into(package: str, banned: set[str]) -> list[str]:
    """Each import by a module of ``package`` of a package in ``banned``."""
    return sorted(
        f"{module} imports {name}"
        for module, names in _modules().items()
        if _top(module) == package
        for name in names
        if _top(name) in banned
    )


def test_the_protocol_is_a_leaf() -> None:
    """The wire (the message codec, instance URIs, typed messages) is what the broker,
    the client and the services share; it needs nothing of theirs."""
    assert _outside("protocol", {"protocol", "errors", "spec"}) == []


def test_beside_pflux_the_protocol_imports_its_dependencies_and_the_core_only() -> None:
    """The codec is orjson, the typed messages msgspec structures (pflux's two
    dependencies); instance URIs are read by ``_pfluxcore.uri``, which the flux
    package shares."""
    allowed = {"pflux", "_pfluxcore", "msgspec", "orjson", *sys.stdlib_module_names}
    found = sorted(
        f"{path.relative_to(ROOT)} imports {name}"
        for path in sorted((ROOT / "protocol").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, (ast.Import, ast.ImportFrom)) and not getattr(node, "level", 0)
        for name in (
            [alias.name for alias in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
        )
        if name.partition(".")[0] not in allowed
    )
    assert found == []


def test_the_client_does_not_import_the_broker() -> None:
    """A client speaks the wire (``pflux.protocol``), never the broker's internals."""
    assert _into("client", {"broker", "cli"}) == []


def test_the_broker_does_not_import_the_client_or_the_cli() -> None:
    assert _into("broker", {"client", "cli"}) == []


def _cli_may_import(name: str) -> bool:
    """``name`` is ``pflux``, a name of its facade, or a package the CLI may import."""
    if name == "pflux" or _top(name) in CLI_MAY_IMPORT:
        return True
    return name.count(".") == 1 and _top(name) in pflux.__all__


def _cli_reaching(module: str) -> list[str]:
    return sorted(
        f"{module} imports {name}" for name in _modules()[module] if not _cli_may_import(name)
    )


def test_the_cli_imports_only_the_facade_spec_and_errors() -> None:
    """A command is a client: it asks through ``pflux``'s public names (``Client``, the
    constants it needs), never through the modules behind them, TYPE_CHECKING
    imports too, so the modules behind the facade can move without touching it."""
    reaching = [
        line
        for module in sorted(_modules())
        if _top(module) == "cli" and module not in CLI_EXCEPTIONS
        for line in _cli_reaching(module)
    ]
    assert reaching == [], "import it from pflux (add it to the facade if it is not there)"


@pytest.mark.parametrize("module", sorted(CLI_EXCEPTIONS))
def test_each_cli_exception_is_still_needed(module: str) -> None:
    assert _cli_reaching(module), f"{module} needs no exception: drop it from CLI_EXCEPTIONS"


def test_a_facade_name_is_told_from_a_module() -> None:
    assert _cli_may_import("pflux.Client")
    assert _cli_may_import("pflux.spec.resultcodes")
    assert not _cli_may_import("pflux.api")
    assert not _cli_may_import("pflux.api.Client")
    assert not _cli_may_import("pflux.client.handle")


@cache
def _packages() -> frozenset[str]:
    """The nodes: each package and top-level module below pflux."""
    return frozenset(filter(None, (_top(module) for module in _modules())))


def _node(name: str) -> str | None:
    """The package-level node of an imported name: the first component below ``pflux``
    (a top-level module is its own node), a facade name standing for its home's."""
    top = _top(name)
    if top is None or top in _packages():
        return top
    home = pflux._HOMES.get(top)  # ``from pflux import Client``
    return _top(home) if home else None  # a name pflux/__init__.py defines itself


def _graph() -> dict[str, set[str]]:
    """Which package imports which, from the code (the facade itself is no node: it
    imports nothing until a name is asked for)."""
    graph: dict[str, set[str]] = {node: set() for node in _packages()}
    for module, names in _modules().items():
        importer = _top(module)
        if importer is None:
            continue
        graph[importer].update(n for n in map(_node, names) if n not in (None, importer))
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected part of ``graph`` with more than one node, as one cycle
    through it (``[a, b, ..., a]``), sorted."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    parts: list[set[str]] = []

    def visit(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        for after in sorted(graph[node]):
            if after not in order:
                visit(after)
                low[node] = min(low[node], low[after])
            elif after in stack:
                low[node] = min(low[node], order[after])
        if low[node] == order[node]:
            part = set()
            while not part or node not in part:
                part.add(stack.pop())
            parts.append(part)

    for node in sorted(graph):
        if node not in order:
            visit(node)
    return sorted(_one_cycle(graph, part) for part in parts if len(part) > 1)


def _one_cycle(graph: dict[str, set[str]], part: set[str]) -> list[str]:
    """A cycle through the first node of ``part`` that stays inside it (breadth first,
    so the shortest)."""
    start = min(part)
    paths = [[start]]
    while paths:
        path = paths.pop(0)
        for after in sorted(graph[path[-1]] & part):
            if after == start:
                return [*path, start]
            if after not in path:
                paths.append([*path, after])
    raise AssertionError(f"{sorted(part)} holds no cycle")


def test_no_package_import_cycle() -> None:
    """pflux's packages import each other in one direction only: a cycle means neither
    can be understood, tested or moved without the other."""
    found = _cycles(_graph())
    assert found == [], " ; ".join(" -> ".join(cycle) for cycle in found)


def test_a_cycle_is_found_and_named() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e", "a"}}
    assert _cycles(graph) == [["a", "b", "c", "a"]]
    assert _cycles({"x": {"y"}, "y": set()}) == []
    assert _node("pflux.Client") == "api"
    assert _node("pflux.__version__") is None
    assert _node("pflux.broker.router") == "broker"


def test_the_safe_file_helpers_import_nothing_of_pflux() -> None:
    """``pflux.safefs`` serves job-exec, the job shell and ``pflux start`` alike, so it
    depends on none of them."""
    reaching = sorted(
        f"{module} imports {name}"
        for module, names in _modules().items()
        if _top(module) == "safefs"
        for name in names
        if _top(name) not in ("safefs", None)
    )
    assert reaching == []


def test_the_instance_fields_do_not_import_the_jobs_fields() -> None:
    """``pflux.cli.jobfields`` loads the ``instance.*`` fields' module when a format
    asks for one; that module reads a job through a protocol, so the two form no cycle."""
    names = _modules()["pflux.cli.jobinstance"]
    assert not any(name.startswith("pflux.cli.jobfields") for name in names)
    assert "pflux.cli.jobinstance" in _modules()["pflux.cli.jobfields"]


def test_the_privileged_helper_imports_no_service_but_the_shell() -> None:
    """``pflux.imp`` runs as root beside the instance, a process of its own: it runs the
    job shell (``pflux.shell``) and reads the wire, never the broker or another service."""
    allowed = {"imp", "shell", "protocol", "safefs", "spec", "errors", "fluxshim"}
    assert _outside("imp", allowed) == []
