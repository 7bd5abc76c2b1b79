"""Inside an instance, its initial program and its jobs find ``flux`` and ``pflux``
on PATH and the ``flux`` package's directory first on PYTHONPATH, whatever PATH
they started with; ``--no-flux-shim`` and ``[shim] enable = false`` turn it off."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from pflux import fluxshim
from support.instance import PFLUX, environ, start_with_config

# what a program prints of its environment: where flux and pflux are, the paths
SHOW = (
    'echo "flux=$(command -v flux)"; echo "pflux=$(command -v pflux)";'
    ' echo "pythonpath=$PYTHONPATH";'
    ' python3 -c "import sys; print(\\"syspath=\\" + sys.path[1])"'
)


def start(*args: str, path: str = "/usr/bin:/bin") -> subprocess.CompletedProcess[str]:
    """``pflux start ARGS`` run from a PATH with nothing of pflux's on it."""
    return subprocess.run(
        [str(PFLUX), "start", "--cores", "2", *args],
        capture_output=True,
        text=True,
        env=environ(PATH=path, PYTHONPATH="/mine"),
        timeout=120,
        check=False,
    )


def shown(text: str) -> list[dict[str, str]]:
    """Each SHOW's output in ``text``, as a dict."""
    found: list[dict[str, str]] = []
    for line in text.splitlines():
        name, _, value = line.partition("=")
        if name == "flux":
            found.append({})
        found[-1][name] = value
    return found


def test_the_initial_program_and_a_job_find_flux_pflux_and_the_flux_package(uri: str) -> None:
    proc = start("sh", "-c", SHOW)
    assert proc.returncode == 0, proc.stderr
    job = subprocess.run(  # submitted from a PATH with nothing of pflux's on it
        [str(PFLUX), "run", "sh", "-c", f"{SHOW}; echo FLUX_KVS_NAMESPACE=$FLUX_KVS_NAMESPACE"],
        capture_output=True,
        text=True,
        env={**environ(PFLUX_URI=uri, PYTHONPATH="/mine"), "PATH": "/usr/bin:/bin"},
        timeout=60,
        check=False,
    )
    assert job.returncode == 0, job.stderr
    (initial,) = shown(proc.stdout)
    (in_job,) = shown(job.stdout)
    for seen in (initial, in_job):
        assert seen["flux"] == os.path.join(fluxshim.BIN, "flux")
        assert seen["pflux"] == os.path.join(fluxshim.BIN, "pflux")
        assert seen["pythonpath"] == f"{fluxshim.PYTHON}:/mine"  # first, keeping what was there
        assert seen["syspath"] == fluxshim.PYTHON  # where another interpreter imports flux from
    assert in_job["FLUX_KVS_NAMESPACE"].startswith("job-")


def test_the_users_python_stays_first_in_the_instance_its_jobs_and_nested_ones(
    tmp_path: Path,
) -> None:
    mine = tmp_path / "venv" / "bin"  # the user's activated environment, not pflux's
    mine.mkdir(parents=True)
    for name in ("python3", "pip"):
        (mine / name).write_text("#!/bin/sh\nexit 0\n")
        (mine / name).chmod(0o755)
    where = 'echo "python3=$(command -v python3) pip=$(command -v pip)"'
    proc = start(
        "sh",
        "-c",
        f"{where}; flux run sh -c '{where}' && pflux run sh -c '{where}'"
        f" && pflux run pflux start --cores 1 sh -c '{where}; pflux run true'",
        path=f"{mine}:/usr/bin:/bin",
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines == [f"python3={mine}/python3 pip={mine}/pip"] * 4


def test_no_flux_shim_and_the_config_key_turn_it_off(tmp_path: Path) -> None:
    proc = start("--no-flux-shim", "sh", "-c", f"{SHOW}; {PFLUX} run sh -c '{SHOW}'")
    assert proc.returncode == 0, proc.stderr
    for seen in shown(proc.stdout):
        assert seen["flux"] == seen["pflux"] == ""
        assert seen["pythonpath"] == "/mine"
    with_key = start_with_config(tmp_path, "[shim]\nenable = false\n", "sh", "-c", SHOW)
    assert with_key.returncode == 0, with_key.stderr
    assert shown(with_key.stdout)[0]["flux"] == ""


def test_a_bad_shim_key_is_refused_naming_it(tmp_path: Path) -> None:
    bad = start_with_config(tmp_path, '[shim]\nenable = "no"\n')
    assert bad.returncode == 1
    assert "[shim] enable: must be true or false, got 'no'" in bad.stderr
    typo = start_with_config(tmp_path, "[shim]\nenabled = false\n")
    assert typo.returncode == 1
    assert "[shim] enabled: unknown key (did you mean enable?)" in typo.stderr


def test_the_initial_program_inherits_no_job_task_or_pmi_variables() -> None:
    leaked = {"FLUX_JOB_ID": "ƒ2", "PMI_RANK": "3", "SLURM_JOB_ID": "7", "FLUX_TASK_RANK": "1"}
    proc = subprocess.run(
        [str(PFLUX), "start", "--cores", "1", "sh", "-c", "env"],
        capture_output=True,
        text=True,
        env=environ(**leaked, KEPT="yes"),
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    names = {line.partition("=")[0] for line in proc.stdout.splitlines()}
    assert "KEPT" in names
    assert not names & leaked.keys()  # as flux-core's broker: none reaches it
