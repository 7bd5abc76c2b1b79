"""A client's own resources stay bounded whatever it is asked to submit: ``submit
--cc`` builds and sends its copies a window at a time, so a large IDSET costs the
client a window's memory, and ids come back while later copies are yet to be built."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

from support.instance import PFLUX, environ, ok

COPIES = 10_000
# each copy's jobspec holds the environment: built all at once, this padding alone
# would cost COPIES x 8 KiB = 80 MB
PAD = "x" * 8192
PEAK_CEILING_MB = 60  # measured: about 20 MB windowed, over 200 MB built up front


# The peak is taken by a small parent of the command's own, not by this process: an
# exec records the mm it replaces in the new program's ru_maxrss, and pytest's
# subprocess starts children by vfork, sharing pytest's own large mm until then.
MEASURE = """
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_measured(uri: str, *args: str) -> tuple[int, list[str], str, float]:
    """``pflux ARGS``: its exit code, stdout lines, stderr, and peak RSS in MB (the
    kernel's high-water mark of its resident set, as wait4 reports it to its parent)."""
    with tempfile.TemporaryDirectory() as scratch:
        peak = os.path.join(scratch, "peak")
        proc = subprocess.run(
            [sys.executable, "-c", MEASURE, peak, str(PFLUX), *args],
            capture_output=True,
            text=True,
            encoding="utf-8",
            env=environ(PFLUX_URI=uri, PFLUX_PAD=PAD),
            check=False,
        )
        with open(peak, encoding="ascii") as file:
            kib = int(file.read())
    return proc.returncode, proc.stdout.splitlines(), proc.stderr, kib / 1024


def test_submit_cc_holds_a_window_of_copies_not_all_of_them(uri: str) -> None:
    rc, ids, err, peak = run_measured(
        uri, "submit", f"--cc=1-{COPIES}", "--urgency=hold", "-n1", "true"
    )
    assert rc == 0, err
    assert len(set(ids)) == COPIES
    assert peak < PEAK_CEILING_MB, f"client peak RSS {peak:.0f} MB for {COPIES} copies"


def test_copies_are_acknowledged_before_the_later_ones_are_built(uri: str) -> None:
    # copies 0-31 are good; copy 32's urgency is refused when it is built
    rc, ids, err, _ = run_measured(uri, "submit", "--cc=0-40", "--urgency={cc}", "true")
    assert rc == 1
    assert err == "pflux-submit: ERROR: --urgency=32: must be 0-31, hold, default or expedite\n"
    assert len(ids) == 32  # each one sent before the bad copy was reached has its id
    listed = ok(uri, "jobs", "-a", "-c0", "-n", "-o", "{id.f58}").split()
    assert set(ids) <= set(listed)
