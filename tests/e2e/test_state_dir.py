"""``pflux start --state-dir``: only a new, empty or pflux-made directory is served from."""

from __future__ import annotations

from pathlib import Path

from support.instance import console


def test_a_directory_holding_other_files_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "passwd").write_text("root:x:0:0::/root:/bin/sh\n")
    (etc / "hosts").write_text("127.0.0.1 localhost\n")
    before = {p.name: (p.read_text(), p.stat().st_mtime_ns) for p in etc.iterdir()}
    proc = console("start", f"--state-dir={etc}", "true")
    assert proc.returncode == 1
    assert proc.stderr == (
        f"pflux-start: ERROR: --state-dir {etc}: not a pflux state directory (it holds"
        " hosts, passwd): name a new or empty directory, or one pflux made\n"
    )
    assert {p.name: (p.read_text(), p.stat().st_mtime_ns) for p in etc.iterdir()} == before


def test_a_state_directory_pflux_made_is_started_again(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()  # empty: taken
    for _ in range(2):
        proc = console("start", f"--state-dir={state}", "true")
        assert (proc.returncode, proc.stderr) == (0, "")
    assert (state / "kvs.sqlite").is_file()
    assert (state / "pflux-state").is_file()
