"""The flux package runs in the tools' interpreters: Python 3.8 syntax, standard
library imports only (PyYAML where present), and a cheap ``import flux``."""

from __future__ import annotations

import ast
import json
import sys

from support.shim import SHIM_PYTHON, flux_output

ALLOWED_THIRD_PARTY = {"yaml"}  # PyYAML, used only if importable


def _modules() -> list:
    return sorted((SHIM_PYTHON / "flux").rglob("*.py"))


def test_every_module_parses_as_python_3_8_and_imports_only_the_standard_library() -> None:
    stdlib = sys.stdlib_module_names
    assert len(_modules()) >= 15
    for path in _modules():
        tree = ast.parse(path.read_text(), str(path), feature_version=(3, 8))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{path}: relative import"
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                assert top in stdlib or top == "flux" or top in ALLOWED_THIRD_PARTY, (
                    f"{path}:{node.lineno}: imports {name}"
                )


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
