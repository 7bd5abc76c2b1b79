"""The state directory: pflux serves only from a directory that is new, empty or its own."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pflux.broker import private
from pflux.errors import PfluxError


def _snapshot(path: Path) -> dict[str, tuple[bytes, float, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime, p.stat().st_mode) for p in path.iterdir()}


def test_a_directory_of_other_files_is_refused_naming_them_and_left_alone(tmp_path: Path) -> None:
    etc = tmp_path / "etc"
    etc.mkdir(0o755)
    for name in ("passwd", "group", "hosts", "fstab", "kvs.sqlite"):
        (etc / name).write_text(name)
    before, mode = _snapshot(etc), etc.stat().st_mode
    with pytest.raises(PfluxError) as caught:
        private.state_directory(etc)
    assert str(caught.value) == (
        f"--state-dir {etc}: not a pflux state directory (it holds fstab, group, hosts,"
        " passwd): name a new or empty directory, or one pflux made"
    )
    assert _snapshot(etc) == before
    assert etc.stat().st_mode == mode


def test_a_new_or_empty_directory_is_taken_and_marked(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir(0o700)
    for path in (tmp_path / "new", empty):
        private.state_directory(path)
        assert os.listdir(path) == [private.MARKER]
        (path / "notes").write_text("the owner's own file")
        private.state_directory(path)  # marked: whatever else it holds now


def test_an_unmarked_directory_of_pflux_files_is_taken(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(0o700)
    for name in ("kvs.sqlite", "kvs.sqlite-wal", "kvs.sqlite.lock", "job-list.sqlite", "exec"):
        (state / name).touch()
    private.state_directory(state)
    assert (state / private.MARKER).is_file()


def test_a_parent_others_may_write_in_is_refused_unless_sticky(tmp_path: Path) -> None:
    open_place = tmp_path / "open"
    open_place.mkdir()
    open_place.chmod(0o777)
    with pytest.raises(PfluxError) as caught:
        private.state_directory(open_place / "state")
    assert str(caught.value) == (
        f"{open_place / 'state'}: unsafe place for a state directory: {open_place} (owner uid"
        f" {os.getuid()}, mode 0777) lets others replace it; name one in a directory of your"
        " own or root's that others cannot write in (or a sticky one, as /tmp)"
    )
    assert list(open_place.iterdir()) == []
    open_place.chmod(0o1777)
    private.state_directory(open_place / "state")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a link away")
def test_a_link_of_another_users_is_refused(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir(0o700)
    link = tmp_path / "link"
    link.symlink_to(mine)
    os.lchown(link, 4242, 4242)
    with pytest.raises(PfluxError, match=r"unsafe state directory: a link of uid 4242's"):
        private.state_directory(link)
    assert list(mine.iterdir()) == []
