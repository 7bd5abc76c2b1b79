"""``pip install pflux`` installs no top-level ``flux`` command or module (they would
shadow a real flux-core, or PyPI's unrelated ``flux``): the shim ships inside the
pflux package, its ``flux`` command executable there."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from pflux import fluxshim

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_holds_pflux_alone_and_installs_only_pflux_commands() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["scripts"] == {
        "pflux": "pflux.cli:command",
        "pflux-imp": "pflux.imp.main:main",  # the privileged helper, for a site's instance
    }
    assert "gui-scripts" not in project["project"]
    wheel = project["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert wheel == {"packages": ["src/pflux"]}  # no force-include, no shared scripts


def test_the_shim_is_inside_the_package_and_its_flux_is_executable() -> None:
    package = Path(fluxshim.__file__).parent
    assert package.parent == ROOT / "src" / "pflux"
    assert Path(fluxshim.BIN) == package / "bin"
    assert Path(fluxshim.PYTHON) == package / "python"
    assert os.access(Path(fluxshim.BIN) / "flux", os.X_OK)


def test_pflux_loads_the_shared_core_beside_flux_without_putting_flux_on_its_path() -> None:
    code = (
        "import importlib.util, sys\n"
        "from pflux.spec.fluid import JobID\n"
        "import _pfluxcore\n"
        "flux = importlib.util.find_spec('flux')\n"
        "print(_pfluxcore.__file__)\n"
        "print(flux.origin if flux else None)\n"
        "print(JobID(65535).words)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True
    )
    core, flux, words = proc.stdout.splitlines()
    assert Path(core) == Path(fluxshim.PYTHON) / "_pfluxcore" / "__init__.py"
    assert flux == "None" or not Path(flux).is_relative_to(fluxshim.PYTHON)  # flux-core's
    assert words == "nevada-archive-academy--academy-academy-academy"
