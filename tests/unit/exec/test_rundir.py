"""The parent of the jobs' FLUX_JOB_TMPDIR: a name no other user can take first."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from pflux.broker.router import Broker
from pflux.exec.config import job_rundir


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    """A world-writable, sticky directory standing for /dev/shm."""
    place = tmp_path / "shm"
    place.mkdir()
    place.chmod(0o1777)
    return place


def _broker(shared: Path) -> Broker:
    return Broker(os.getuid(), attrs={"rundir": str(shared)})


def _state(tmp_path: Path) -> str:
    state = tmp_path / "state"
    (state / "exec").mkdir(parents=True, mode=0o700)
    return str(state)


def test_the_directory_is_unpredictable_private_and_kept_for_a_restart(
    tmp_path: Path, shared: Path
) -> None:
    state = _state(tmp_path)
    path = job_rundir(_broker(shared), state, fresh=True)
    st = os.lstat(path)
    assert Path(path).parent == shared
    assert st.st_mode & 0o777 == 0o700
    assert st.st_uid == os.geteuid()
    digest = hashlib.sha1(os.path.abspath(state).encode()).hexdigest()[:16]
    assert digest not in path  # the name is not derived from anything another user knows
    (Path(path) / "jobtmp-0-ƒleft").mkdir()
    assert job_rundir(_broker(shared), state, fresh=False) == path
    assert os.listdir(path) == ["jobtmp-0-ƒleft"]
    assert job_rundir(_broker(shared), state, fresh=True) == path
    assert os.listdir(path) == []


@pytest.mark.parametrize("swap", ["mode", "symlink", "file"])
def test_a_recorded_directory_that_is_no_longer_safe_is_not_used(
    tmp_path: Path, shared: Path, swap: str
) -> None:
    state = _state(tmp_path)
    path = Path(job_rundir(_broker(shared), state, fresh=True))
    path.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(0o700)
    if swap == "mode":
        path.mkdir()
        path.chmod(0o777)
    elif swap == "symlink":
        path.symlink_to(elsewhere)
    else:
        path.write_text("")
    again = job_rundir(_broker(shared), state, fresh=False)
    assert again != str(path)
    assert os.lstat(again).st_mode & 0o777 == 0o700
    assert list(elsewhere.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory away")
def test_another_users_runtime_directory_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    theirs = tmp_path / "run-user-4242"
    theirs.mkdir(0o700)
    os.chown(theirs, 4242, 4242)  # root's XDG_RUNTIME_DIR, kept through su, is a user's
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(theirs))
    path = job_rundir(Broker(os.getuid()), _state(tmp_path), fresh=True)
    try:
        assert Path(path).parent == Path("/dev/shm")
        assert list(theirs.iterdir()) == []
    finally:
        os.rmdir(path)


def test_a_recorded_directory_whose_parent_others_could_write_in_is_not_used(
    tmp_path: Path, shared: Path
) -> None:
    state = _state(tmp_path)
    path = job_rundir(_broker(shared), state, fresh=True)
    shared.chmod(0o777)  # no longer sticky: another user could swap the directory
    assert job_rundir(_broker(shared), state, fresh=False) != path
