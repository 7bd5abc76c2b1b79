"""The state directory and the databases: private to the owner, and never loosened by pflux.

A jobspec holds its submitter's whole environment, so the databases are 0600;
a directory pflux did not create keeps its mode, and one that others can write
in (where they could replace the socket) is refused, naming the directory.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from support.instance import PFLUX
from support.storage import refused, start


def mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_created_state_directory_is_0700_and_its_databases_0600(tmp_path: Path) -> None:
    state = tmp_path / "state"
    # the initial program sees the files while the instance runs (WAL and all)
    listing = tmp_path / "modes"
    script = f'{PFLUX} submit true >/dev/null && stat -c "%a %n" {state}/*.sqlite* > {listing}'
    proc = start(state, command=("sh", "-c", script))
    assert proc.returncode == 0, proc.stderr
    assert mode(state) == 0o700
    modes = dict(line.split()[::-1] for line in listing.read_text().splitlines())
    for name in (
        "kvs.sqlite",
        "kvs.sqlite-wal",
        "kvs.sqlite-shm",
        "kvs.sqlite-redo",
        "job-list.sqlite",
    ):
        assert modes[str(state / name)] == "600", modes


@pytest.mark.parametrize("shared", [0o1777, 0o777, 0o770, 0o720], ids=lambda m: f"{m:04o}")
def test_a_directory_others_can_write_in_is_refused_and_keeps_its_mode(
    tmp_path: Path, shared: int
) -> None:
    state = tmp_path / "shared"
    state.mkdir()
    os.chmod(state, shared)
    error = refused(start(state), str(state), "unsafe state directory", "not writable by group")
    assert f"mode {shared:04o}" in error
    assert mode(state) == shared
    assert list(state.iterdir()) == []


def test_a_directory_of_another_user_is_refused(tmp_path: Path) -> None:
    if os.getuid() != 0:
        pytest.skip("giving a directory to another user needs root")
    state = tmp_path / "theirs"
    state.mkdir(mode=0o700)
    os.chown(state, 4242, 4242)
    refused(start(state), str(state), "owner uid 4242", f"owned by uid {os.getuid()}")


def test_an_existing_private_directory_keeps_its_mode(tmp_path: Path) -> None:
    state = tmp_path / "mine"
    state.mkdir()
    os.chmod(state, 0o750)
    assert start(state).returncode == 0
    assert mode(state) == 0o750


def test_databases_others_could_read_are_made_0600(tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert start(state, command=(str(PFLUX), "submit", "true")).returncode == 0
    for name in ("kvs.sqlite", "job-list.sqlite"):
        os.chmod(state / name, 0o644)
    redo = state / "kvs.sqlite-redo"  # gone after a clean stop: as a crash might leave it
    redo.touch(mode=0o644)
    os.chmod(redo, 0o644)
    listing = tmp_path / "modes"
    proc = start(state, command=("sh", "-c", f"stat -c %a {redo} > {listing}"))
    assert proc.returncode == 0, proc.stderr
    assert mode(state / "kvs.sqlite") == 0o600
    assert mode(state / "job-list.sqlite") == 0o600
    assert listing.read_text() == "600\n"


def test_a_state_directory_that_cannot_be_made_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    error = refused(start(tmp_path / "file" / "state"), str(tmp_path / "file" / "state"))
    assert "Not a directory" in error
