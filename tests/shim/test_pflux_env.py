"""``pflux env``, as ``flux env``: ``eval "$(pflux env)"`` outside an instance gives a
shell what the instance's programs have (flux, pflux, the package's path, the URI);
with a command, runs it there."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from pflux import fluxshim
from support.instance import PFLUX, environ

# what the evaluated environment reaches: flux's path, and a job run through it
USE = 'command -v flux; flux run echo "in $FLUX_URI"'


def sh(script: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``sh -c SCRIPT`` from a PATH with nothing of pflux's, no instance in the environment."""
    clean = {k: v for k, v in environ(**env).items() if k not in ("PFLUX_URI", "FLUX_URI")}
    return subprocess.run(
        ["sh", "-c", script],
        capture_output=True,
        text=True,
        env={**clean, "PATH": "/usr/bin:/bin", **env},
        timeout=60,
        check=False,
    )


def test_pflux_env_evaluated_by_sh_reaches_the_instance(uri: str) -> None:
    flux = os.path.join(fluxshim.BIN, "flux")
    by_option = sh(f'eval "$({PFLUX} env --uri {uri})"; {USE}')
    assert by_option.returncode == 0, by_option.stderr
    assert by_option.stdout == f"{flux}\nin {uri}\n"
    by_flux_uri = sh(f'eval "$({PFLUX} env)"; {USE}', FLUX_URI=uri)  # flux's variable
    assert by_flux_uri.stdout == f"{flux}\nin {uri}\n", by_flux_uri.stderr


def test_pflux_env_prints_exports_that_survive_the_shell() -> None:
    odd = '/a "quoted" $HOME `dir`\\'
    proc = sh(f"{PFLUX} env", PYTHONPATH=odd)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split("=", 1)[0] for line in lines] == [
        "export PATH",
        "export PYTHONPATH",
        "export PFLUX_PYTHON",
    ]  # no instance named: no URI
    evaluated = sh(f'eval "$({PFLUX} env)"; printf %s "$PYTHONPATH"', PYTHONPATH=odd)
    assert evaluated.stdout == f"{fluxshim.PYTHON}:{odd}"


def test_pflux_env_runs_a_command_in_the_environment(uri: str) -> None:
    proc = sh(f"{PFLUX} env --uri {uri} sh -c 'command -v flux; echo $PFLUX_URI'")
    assert proc.stdout == f"{os.path.join(fluxshim.BIN, 'flux')}\n{uri}\n", proc.stderr
    missing = sh(f"{PFLUX} env no-such-command")
    assert missing.returncode == 1
    assert missing.stderr == "pflux-env: ERROR: no-such-command: No such file or directory\n"
    bad = sh(f"{PFLUX} env --uri ssh://host/x")
    assert bad.returncode == 1
    assert "unsupported instance URI 'ssh://host/x': only local:// is supported" in bad.stderr


def test_pflux_env_puts_only_flux_and_pflux_ahead_of_the_users_python(tmp_path: Path) -> None:
    mine = tmp_path / "bin"  # the user's environment's python3, first on their PATH
    mine.mkdir()
    (mine / "python3").write_text("#!/bin/sh\nexit 0\n")
    (mine / "python3").chmod(0o755)
    show = "command -v python3; command -v pflux; command -v flux"
    proc = sh(f'eval "$({PFLUX} env)"; {show}', PATH=f"{mine}:/usr/bin:/bin")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        f"{mine}/python3",
        os.path.join(fluxshim.BIN, "pflux"),
        os.path.join(fluxshim.BIN, "flux"),
    ]
