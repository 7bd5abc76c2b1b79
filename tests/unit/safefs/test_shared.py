"""A task's output file in a directory anyone may write in: another user's link or
file under its name is not written through."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pflux.safefs.shared import open_output

OTHER = 4242  # a uid other than this process's

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give files away")


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    place = tmp_path / "shared"
    place.mkdir()
    place.chmod(0o1777)
    return place


def _write(path: Path, data: bytes, *, append: bool = False) -> None:
    fd = open_output(str(path), append=append)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def test_a_new_file_and_the_users_own_are_written(shared: Path, tmp_path: Path) -> None:
    out = shared / "out"
    _write(out, b"first\n")
    _write(out, b"second\n", append=True)
    assert out.read_bytes() == b"first\nsecond\n"
    _write(out, b"again\n")
    assert out.read_bytes() == b"again\n"
    target = tmp_path / "target"
    (shared / "link").symlink_to(target)  # the user's own link is followed
    _write(shared / "link", b"through\n")
    assert target.read_bytes() == b"through\n"


@needs_root
def test_another_users_link_is_not_followed(shared: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("unchanged")
    link = shared / "out"
    link.symlink_to(victim)
    os.lchown(link, OTHER, OTHER)
    with pytest.raises(PermissionError, match="another user's link in a directory"):
        _write(link, b"written")
    assert victim.read_text() == "unchanged"


@needs_root
def test_another_users_file_or_a_second_name_is_not_written(shared: Path, tmp_path: Path) -> None:
    theirs = shared / "theirs"
    theirs.write_text("")
    theirs.chmod(0o666)
    os.chown(theirs, OTHER, OTHER)
    with pytest.raises(PermissionError, match="another user's file in a directory anyone"):
        _write(theirs, b"secret")
    assert theirs.read_text() == ""
    precious = tmp_path / "precious"
    precious.write_text("unchanged")
    os.link(precious, shared / "hardlink")
    with pytest.raises(PermissionError, match=r"a file with another name \(a link\)"):
        _write(shared / "hardlink", b"written")
    assert precious.read_text() == "unchanged"


def test_outside_a_shared_directory_links_are_followed_as_always(tmp_path: Path) -> None:
    target = tmp_path / "target"
    (tmp_path / "link").symlink_to(target)
    _write(tmp_path / "link", b"through\n")
    assert target.read_bytes() == b"through\n"
