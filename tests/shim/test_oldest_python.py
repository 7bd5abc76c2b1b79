"""The flux package in the oldest Python it promises, 3.8, where this machine has one:
a tool's whole round (a handle, a jobspec, submit, events, the result, an executor)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from support.instance import LiveInstance
from support.shim import run_flux


def _python38() -> str | None:
    """A python3.8 on PATH that runs (a version manager's stub may not)."""
    found = shutil.which("python3.8")
    if found is None:
        return None
    probe = subprocess.run([found, "-c", "pass"], capture_output=True, check=False)
    return found if probe.returncode == 0 else None


PYTHON38 = _python38()

ROUND = """
import sys
import flux, flux.job
from flux.job import FluxExecutor, JobID, JobspecV1

h = flux.Flux()
jobid = flux.job.submit(h, JobspecV1.from_command(["sh", "-c", "exit 3"]), waitable=True)
flux.job.event_wait(h, jobid, "clean")
result = flux.job.wait(h, jobid)
with FluxExecutor() as executor:
    codes = [f.result(timeout=60) for f in [executor.submit(JobspecV1.from_command(["true"]))]]
print(sys.version_info[:2], JobID(jobid.f58) == jobid, result.success, codes)
"""


@pytest.mark.skipif(PYTHON38 is None, reason="no working python3.8 on PATH")
def test_a_tools_round_in_python_3_8(instance: LiveInstance) -> None:
    assert PYTHON38 is not None
    proc = run_flux(ROUND, instance.uri, python=PYTHON38)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[0] == "(3, 8) True False [0]"
