"""Command lines that tools written for flux type, run as they are against pflux
(HPC-launcher's ``flux run``, Maestro's older ``flux mini run``, executorlib's)."""

from __future__ import annotations

from pathlib import Path

from support.instance import ok


def test_hpc_launchers_run_line(uri: str, tmp_path: Path) -> None:
    out = ok(uri, "run", "-N1", "-n2", "-u", "--exclusive", "-onosetpgrp",
             "--env=HPCL_PRELOAD=lib.so", "--time=5m", "--job-name=hpcl",
             f"--setattr=system.cwd={tmp_path}", "sh", "-c",
             'echo "$FLUX_TASK_RANK $(pwd) $HPCL_PRELOAD"')  # fmt: skip
    assert sorted(out.splitlines()) == [f"0 {tmp_path} lib.so", f"1 {tmp_path} lib.so"]


def test_maestros_mini_run_line(uri: str) -> None:
    out = ok(uri, "mini", "run", "-n", "2", "-N", "1", "-c", "1", "--exclusive", "-o",
             "cpu-affinity=per-task", "echo", "step")  # fmt: skip
    assert out == "step\nstep\n"


def test_executorlibs_run_line(uri: str) -> None:
    out = ok(uri, "run", "--gpus-per-task=0", "-n", "2", "--cores-per-task=1", "echo", "x")
    assert out == "x\nx\n"
