"""The flux package and ``_pfluxcore`` (the logic it shares with pflux) run in the
tools' interpreters: Python 3.8 syntax, standard library imports only (PyYAML
where present), and a cheap ``import flux``."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

from support.shim import SHIM_PYTHON, flux_output

ALLOWED_THIRD_PARTY = {"yaml"}  # PyYAML, used only if importable
CORE = "_pfluxcore"


def _modules(package: str) -> list:
    return sorted((SHIM_PYTHON / package).rglob("*.py"))


def _imports(path: Path) -> list[tuple[int, int, str]]:
    """(line, level, module) of each import in ``path``, parsed as Python 3.8."""
    tree = ast.parse(path.read_text(), str(path), feature_version=(3, 8))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, 0, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.lineno, node.level, node.module or ""))
    return found


def test_every_module_parses_as_python_3_8_and_imports_only_the_standard_library() -> None:
    stdlib = sys.stdlib_module_names
    assert len(_modules("flux")) >= 15
    for path in _modules("flux"):
        for line, level, name in _imports(path):
            assert level == 0, f"{path}: relative import"
            top = name.split(".")[0]
            assert top in stdlib or top in ("flux", CORE) or top in ALLOWED_THIRD_PARTY, (
                f"{path}:{line}: imports {name}"
            )


def test_the_core_imports_only_the_standard_library_and_itself_relatively() -> None:
    """pflux loads the core under its own name or another, so it names itself by dots."""
    stdlib = sys.stdlib_module_names
    assert len(_modules(CORE)) >= 3
    for path in _modules(CORE):
        for line, level, name in _imports(path):
            top = name.split(".")[0]
            assert level > 0 or top in stdlib, f"{path}:{line}: imports {name}"


def test_import_flux_is_cheap_and_loads_no_heavy_module() -> None:
    out = flux_output(
        """
        import time
        before = set(sys.modules)
        t0 = time.perf_counter()
        import flux
        import flux.job
        took = time.perf_counter() - t0
        new = sorted(set(sys.modules) - before)
        import json
        print(json.dumps({"ms": took * 1000, "new": new}))
        """,
        None,
    )
    result = json.loads(out)
    new = result["new"]
    # nothing but the package, ``types`` and ``__future__`` (a few classes each): no
    # json, no typing, no concurrent.futures
    small = ("flux", "types", "__future__")
    assert all(name in small or name.startswith("flux.") for name in new), new
    assert "flux.core.handle" not in new  # the handle loads on first use
    # generous: a few ms where the machine is idle (about 1 ms measured)
    assert result["ms"] < 100, result


def test_importing_the_core_loads_nothing_else() -> None:
    """pflux's command line imports it on every call: no typing, no re, no json."""
    names = sorted(
        f"{CORE}.{path.stem}" for path in _modules(CORE) if not path.stem.startswith("__")
    )
    out = flux_output(
        f"""
        before = set(sys.modules)
        for name in {names!r}:
            __import__(name)
        print(" ".join(sorted(set(sys.modules) - before)))
        """,
        None,
    )
    new = out.split()
    assert len(names) >= 4
    assert set(names) <= set(new)
    small = (CORE, "__future__", "bisect", "_bisect")  # a few functions each
    assert all(name in small or name.startswith(f"{CORE}.") for name in new), new
