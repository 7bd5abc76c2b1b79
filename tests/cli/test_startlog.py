"""``flux startlog`` across restarts of one state directory: a clean stop, a crash."""

from __future__ import annotations

import re
from pathlib import Path

from support.instance import LiveInstance, fails, ok, pflux

STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d"


def test_startlog_lists_each_run_and_tells_a_crash(tmp_path: Path) -> None:
    state = tmp_path / "state"
    first = LiveInstance(state)
    lines = ok(first.uri, "startlog").splitlines()
    assert len(lines) == 1
    assert re.fullmatch(f"{STAMP} - running", lines[0]), lines
    assert first.stop() == 0

    second = LiveInstance(state)
    lines = ok(second.uri, "startlog").splitlines()
    assert re.fullmatch(rf"{STAMP} - {STAMP} \([\d.]+m?s\)", lines[0]), lines
    assert re.fullmatch(f"{STAMP} - running", lines[1]), lines
    assert pflux(second.uri, "startlog", "--check", "--quiet").stdout == ""
    assert pflux(second.uri, "startlog", "--check").returncode == 0
    second.kill()

    with LiveInstance(state) as third:
        lines = ok(third.uri, "startlog", "--show-version").splitlines()
        assert len(lines) == 3
        assert re.fullmatch(rf"{STAMP} \S+ - crashed", lines[1]), lines
        assert re.fullmatch(rf"{STAMP} \S+ - running", lines[2]), lines
        check = pflux(third.uri, "startlog", "--check", "--quiet")
        assert (check.returncode, check.stdout) == (1, "")
        assert fails(third.uri, "startlog", "--check") == ""
