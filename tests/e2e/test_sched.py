"""The scheduler in a real instance: allocation, denial, backfill, and ``pflux resource list``.

Each test runs ``pflux start`` with a shell script as the initial program; jobs
use the test execution mode (``system.exec.test``), so they hold their
resources without processes until canceled.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pflux.cli import resource

PFLUX = Path(sys.executable).with_name("pflux")
HOLD = "--setattr=system.exec.test.run_duration=0s"  # run until canceled


def start(tmp_path: Path, script: str, *options: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "script.sh"
    path.write_text("set -e\n" + script)
    env = {**os.environ, "PATH": f"{PFLUX.parent}:{os.environ['PATH']}"}
    env.pop("PFLUX_URI", None)
    return subprocess.run(
        [str(PFLUX), "start", *options, "sh", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )


def jobs_table(text: str) -> dict[str, tuple[str, dict[str, object]]]:
    """``{name: (state, annotations)}`` from lines ``NAME ID STATE ANNOTATIONS-JSON``."""
    table = {}
    for line in text.splitlines():
        name, _, state, *rest = line.split(" ", 3)
        table[name] = (state, json.loads(rest[0]) if rest and rest[0] else {})
    return table


def test_alloc_deny_and_resource_list(tmp_path: Path) -> None:
    script = f"""
a=$(pflux submit -n2 -t 1h {HOLD} true)
b=$(pflux submit -n1 --gpus-per-task=1 {HOLD} true)
pflux job wait-event $a alloc >/dev/null
pflux job wait-event $b alloc >/dev/null
d=$(pflux submit -n5 true)
pflux job wait-event $d clean >/dev/null
echo ==list; pflux resource list
echo ==rlist; pflux resource list -o rlist -s allocated,free -n
echo ==R; pflux job info $a R
echo ==deny; pflux job eventlog $d | grep exception
pflux cancel $a $b
pflux job wait-event $b clean >/dev/null
echo ==after; pflux resource list -s free -no "{{ncores}} {{ngpus}}"
"""
    proc = start(tmp_path, script, "--cores", "4", "--gpus", "1")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.split("==")
    host = os.uname().nodename
    assert out[1].splitlines()[1:] == [
        "     STATE NNODES NCORES NGPUS NODELIST",
        f"      free      1      1     0 {host}",
        f" allocated      1      3     1 {host}",
        "      down      0      0     0 ",
    ]
    assert out[2].splitlines()[1:] == [
        " allocated      1      3     1 rank0/core[0-2],gpu0",
        "      free      1      1     0 rank0/core3",
    ]
    r = json.loads(out[3].split("\n", 1)[1])
    assert r["execution"]["R_lite"] == [{"rank": "0", "children": {"core": "0-1"}}]
    assert r["execution"]["expiration"] == r["execution"]["starttime"] + 3600
    assert 'type="alloc"' in out[4]
    assert "unsatisfiable request: need 5 slot(s) of 1 core(s)" in out[4]
    assert out[5].splitlines()[1:] == ["4 1"]


def test_backfill_in_an_instance(tmp_path: Path) -> None:
    script = f"""
a=$(pflux submit -n3 -t 100s {HOLD} true)
pflux job wait-event $a alloc >/dev/null
b=$(pflux submit -n4 {HOLD} true)
d=$(pflux submit -n1 {HOLD} true)
c=$(pflux submit -n1 -t 10s {HOLD} true)
pflux job wait-event $c alloc >/dev/null
for name in a b c d; do
  eval id=\\$$name
  echo "$name $(pflux jobs -n -o '{{id}} {{state}} {{annotations}}' $id)"
done
pflux cancel $a $b $c $d
"""
    proc = start(tmp_path, script, "--cores", "4", "--gpus", "0")
    assert proc.returncode == 0, proc.stderr
    table = jobs_table(proc.stdout)
    assert table["a"][0] == "RUN"
    assert table["c"][0] == "RUN"  # ends before a, so before b can start: backfilled
    assert table["c"][1] == {"sched": {"resource_summary": "rank0/core3"}}
    assert table["d"] == ("SCHED", {"sched": {"reason_pending": "insufficient resources"}})
    state, annotations = table["b"]
    assert state == "SCHED"
    sched = annotations["sched"]
    assert isinstance(sched, dict)
    assert sched["reason_pending"] == "insufficient resources"
    assert isinstance(sched["t_estimate"], float)


def test_resource_list_without_an_instance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PFLUX_URI", f"local://{tmp_path}/nothing")
    assert resource.main(["list"]) == 1
    assert capsys.readouterr().err.startswith("pflux-resource: ERROR: cannot connect")
