"""A file replaced whole: the new content in place, private, and never written through a
link someone left at the scratch name."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pflux.safefs.replace import replace_file


def test_the_new_content_takes_the_old_files_place(tmp_path: Path) -> None:
    path = tmp_path / "record"
    path.write_bytes(b"old")
    replace_file(str(path), b"new" * 100_000)
    assert path.read_bytes() == b"new" * 100_000
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record"]


def test_a_link_at_the_scratch_name_is_not_written_through(tmp_path: Path) -> None:
    target = tmp_path / "someone-elses"
    target.write_bytes(b"theirs")
    (tmp_path / "record.new").symlink_to(target)
    replace_file(str(tmp_path / "record"), b"ours")
    assert target.read_bytes() == b"theirs"
    assert (tmp_path / "record").read_bytes() == b"ours"
    assert not (tmp_path / "record").is_symlink()


def test_a_file_that_cannot_be_made_leaves_the_old_one(tmp_path: Path) -> None:
    path = tmp_path / "record"
    path.write_bytes(b"old")
    (tmp_path / "record.new").mkdir()  # in the way, and not removable by unlink
    with pytest.raises(IsADirectoryError):  # unlink refuses a directory
        replace_file(str(path), b"new")
    assert path.read_bytes() == b"old"
    assert os.path.isdir(tmp_path / "record.new")
