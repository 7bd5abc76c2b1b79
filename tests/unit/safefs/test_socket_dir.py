"""``socket_dir``: the directory of a socket others may reach (the system instance's
/run/pflux) is made 0755 whatever the umask, or taken only if it is a real directory of
this user's that no one else may write in."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pflux.safefs.shared import socket_dir


def test_one_made_is_0755_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        assert socket_dir(str(tmp_path / "run")) == ""
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.lstat(tmp_path / "run").st_mode) == 0o755


def test_ones_own_is_taken_as_it_is(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir(mode=0o700)
    assert socket_dir(str(tmp_path / "run")) == ""
    assert stat.S_IMODE(os.lstat(tmp_path / "run").st_mode) == 0o700


def test_one_in_a_place_others_could_replace_it_is_refused(tmp_path: Path) -> None:
    tmp_path.chmod(0o777)  # writable by others, not sticky
    why = socket_dir(str(tmp_path / "run"))
    assert why == f"{tmp_path}/run: {tmp_path} (owner uid {os.geteuid()}, mode 0777) lets" \
        " others replace it"  # fmt: skip
    assert not (tmp_path / "run").exists()


def test_a_file_in_its_place_is_refused(tmp_path: Path) -> None:
    (tmp_path / "run").write_text("")
    assert (
        socket_dir(str(tmp_path / "run")) == f"{tmp_path}/run: not a directory (a link or a file)"
    )
