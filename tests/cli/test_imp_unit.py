"""The privileged helper's unit (``etc/pflux-imp.service``) and example configuration, and
``pflux-imp`` refusing what it cannot run with."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from support.instance import PFLUX
from support.units import verify

REPO = Path(__file__).parents[2]
UNIT = REPO / "etc" / "pflux-imp.service"
IMP = PFLUX.with_name("pflux-imp")


def test_the_unit_runs_the_helper_as_root_before_the_instance_and_spares_running_jobs() -> None:
    lines = UNIT.read_text().splitlines()
    assert "ExecStart=/opt/pflux/bin/pflux-imp --config /etc/pflux/imp.toml" in lines
    assert "User=root" in lines
    assert "Before=pflux.service" in lines
    assert "KillMode=process" in lines  # the guests' shells are its children
    assert "RuntimeDirectory=pflux-imp" in lines
    readme = (REPO / "README.md").read_text()
    for named in ("etc/pflux-imp.service", "etc/imp.toml", "/etc/pflux/imp.toml", "[exec] imp"):
        assert named in readme, named


def test_systemd_accepts_the_unit(tmp_path: Path) -> None:
    proc = verify(UNIT, "/opt/pflux/bin/pflux-imp", IMP, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "pflux-imp.service" not in proc.stderr, proc.stderr


def test_the_helper_refuses_a_bad_configuration_naming_the_key(tmp_path: Path) -> None:
    config = tmp_path / "imp.toml"
    config.write_text('allowed-users = [65534]\nalowed-mechanisms = ["munge"]\n')
    proc = subprocess.run(
        [sys.executable, "-m", "pflux.imp", "--config", str(config)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode == 1
    if os.geteuid() == 0:
        assert "unknown key 'alowed-mechanisms'" in proc.stderr, proc.stderr
    else:
        assert "must run as root" in proc.stderr, proc.stderr
