"""``pip install pflux`` installs no top-level ``flux`` command or module (they would
shadow a real flux-core, or PyPI's unrelated ``flux``): the shim ships inside the
pflux package, its ``flux`` command executable there."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

from pflux import fluxshim

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_holds_pflux_alone_and_installs_only_the_pflux_command() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["scripts"] == {"pflux": "pflux.cli:main"}
    assert "gui-scripts" not in project["project"]
    wheel = project["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel == {"packages": ["src/pflux"]}  # no force-include, no shared scripts


def test_the_shim_is_inside_the_package_and_its_flux_is_executable() -> None:
    package = Path(fluxshim.__file__).parent
    assert package.parent == ROOT / "src" / "pflux"
    assert Path(fluxshim.BIN) == package / "bin"
    assert Path(fluxshim.PYTHON) == package / "python"
    assert os.access(Path(fluxshim.BIN) / "flux", os.X_OK)
