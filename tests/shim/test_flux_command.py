"""The ``flux`` command of the shim is pflux's CLI under flux's name: its usage and
messages say ``flux``, a sub-command pflux lacks is refused in flux's words, and
it finds pflux from any PATH."""

from __future__ import annotations

import os
import subprocess
import sys

from pflux import fluxshim
from support.instance import environ

FLUX = os.path.join(fluxshim.BIN, "flux")


def flux(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The shim's ``flux``, from a PATH with nothing of pflux's on it."""
    return subprocess.run(
        [FLUX, *args],
        capture_output=True,
        text=True,
        env=environ(PATH="/usr/bin:/bin", PFLUX_PYTHON=sys.executable, **env),
        timeout=60,
        check=False,
    )


def test_flux_runs_jobs_and_names_itself_flux(uri: str) -> None:
    ran = flux("run", "sh", "-c", "echo ran; printenv PFLUX_AS_FLUX", PFLUX_URI=uri)
    assert ran.stdout == "ran\n"  # and the marker flux gives pflux reached no job
    assert ran.returncode == 1, ran.stderr  # printenv found nothing
    assert ran.stderr == "flux-job: task(s) exited with exit code 1\n"
    missing = flux("job", "info", "ƒ2", "R", PFLUX_URI=uri)
    assert missing.returncode == 1
    assert missing.stderr == "flux-job: ERROR: job ƒ2 not found\n"
    usage = flux("submit", "--no-such-option")
    assert usage.returncode == 2
    assert "flux submit: error: unrecognized arguments: --no-such-option" in usage.stderr
    assert flux("--help").stdout.startswith("usage: flux [--version] COMMAND")


def test_a_command_pflux_lacks_is_refused_in_flux_words() -> None:
    proc = flux("no-such-command")
    assert proc.returncode == 1
    assert proc.stderr == "flux: `no-such-command' is not a flux command.  See 'flux --help'\n"
    proc = flux("resourcccce")
    assert (proc.returncode, proc.stderr) == (
        1,
        "flux: `resourcccce' is not a flux command.  See 'flux --help'\n"
        "flux: The most similar command is\nflux: \tresource\n",
    )


def test_flux_finds_pflux_on_path_without_pflux_python(uri: str) -> None:
    bindir = os.path.dirname(sys.executable)  # where this venv's pflux is
    env = {k: v for k, v in environ(PFLUX_URI=uri).items() if k != fluxshim.PYTHON_ENV}
    found = subprocess.run(
        [FLUX, "jobs", "--help"],
        capture_output=True,
        text=True,
        env={**env, "PATH": f"{bindir}:/usr/bin:/bin"},
        timeout=60,
        check=False,
    )
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith("usage: flux jobs")
    lost = subprocess.run(
        [FLUX, "jobs"],
        capture_output=True,
        text=True,
        env={**env, "PATH": "/usr/bin:/bin"},
        timeout=60,
        check=False,
    )
    assert lost.returncode == 127
    assert lost.stderr == (
        "flux: cannot run pflux: PFLUX_PYTHON is not set and pflux is not on PATH\n"
    )


def test_flux_goes_where_flux_uri_points_over_pflux_uri(uri: str, tmp_path: object) -> None:
    # a tool points FLUX_URI at another instance (a nested one), PFLUX_URI left as is
    elsewhere = f"local://{tmp_path}/no-instance"
    listed = flux("jobs", "-a", "-n", FLUX_URI=uri, PFLUX_URI=elsewhere)
    assert listed.returncode == 0, listed.stderr
    gone = flux("jobs", "-a", "-n", FLUX_URI=elsewhere, PFLUX_URI=uri)
    assert gone.returncode != 0
    assert "no-instance" in gone.stderr
