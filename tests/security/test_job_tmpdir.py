"""Another user against the jobs' temporary directories, of a user's instance and root's.

The attacker plants what pflux once used as the parent of every job's
``FLUX_JOB_TMPDIR`` (``/dev/shm/pflux-jobs-UID-HASH``, a name computable from
the state directory), before the victim's instance starts or while it runs, and
tries to reach into the directory the instance does use. The victim's job
writes a secret into ``FLUX_JOB_TMPDIR``: it must run in a directory of the
victim's own, mode 0700, and nothing of it may reach the attacker.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from support.instance import PFLUX, LiveInstance, environ
from support.users import User

SECRET = "the victim's secret"
JOB = (
    f'echo "{SECRET}" > "$FLUX_JOB_TMPDIR/f"; d=$(dirname "$FLUX_JOB_TMPDIR");'
    ' echo "$d"; stat -c "%u %a %F" "$d"'
)
# as the attacker: what it can do to every directory of the victim's in /dev/shm
REACH = """
import os, sys
victim = int(sys.argv[1])
for name in sorted(os.listdir("/dev/shm")):
    path = os.path.join("/dev/shm", name)
    if not name.startswith("pflux-jobs-") or os.lstat(path).st_uid != victim:
        continue
    for attempt in (
        lambda: os.listdir(path),
        lambda: os.mkdir(os.path.join(path, "mine")),
        lambda: os.rename(path, path + ".moved"),
        lambda: os.rmdir(path),
    ):
        try:
            attempt()
        except PermissionError:
            continue
        print("reached", path)
"""


def _predictable(uid: int, state_dir: Path) -> Path:
    digest = hashlib.sha1(str(state_dir).encode()).hexdigest()[:16]
    return Path(f"/dev/shm/pflux-jobs-{uid}-{digest}")


@pytest.fixture
def planted() -> Iterator[list[Path]]:
    """Paths the attacker plants in /dev/shm, removed after the test."""
    paths: list[Path] = []
    yield paths
    for path in paths:
        if path.is_symlink() or not path.is_dir():
            path.unlink(missing_ok=True)
        else:
            shutil.rmtree(path, ignore_errors=True)


def _plant(attacker: User, path: Path, how: str, loot: Path) -> subprocess.CompletedProcess[str]:
    """As the attacker: ``path`` an open directory, or a link to ``loot``."""
    if how == "symlink":
        code = "import os, sys; os.symlink(sys.argv[2], sys.argv[1])"
    else:
        code = "import os, sys; os.mkdir(sys.argv[1]); os.chmod(sys.argv[1], 0o777)"
    return attacker.code(code, str(path), str(loot))


def _attack(
    victim_uid: int,
    attacker: User,
    *,
    state_dir: Path,
    how: str,
    start: Callable[[], LiveInstance],
    run_job: Callable[[str], subprocess.CompletedProcess[str]],
    planted: list[Path],
) -> None:
    loot = attacker.mkdir(attacker.home / f"loot-{victim_uid}-{how.replace(' ', '-')}", 0o777)
    predictable = _predictable(victim_uid, state_dir)
    planted.append(predictable)
    if how != "during its life":
        proc = _plant(attacker, predictable, how, loot)
        assert proc.returncode == 0, proc.stderr
    with start() as live:
        if how == "during its life":  # where nothing of the victim's is in the way
            _plant(attacker, predictable, "symlink", loot)
        job = run_job(live.uri)
        assert job.returncode == 0, job.stderr
        parent, status = job.stdout.splitlines()
        assert status == f"{victim_uid} 700 directory"
        assert Path(parent) != predictable
        reach = attacker.code(REACH, str(victim_uid))
        assert (reach.returncode, reach.stdout) == (0, ""), reach.stderr
        assert list(loot.iterdir()) == []
        if predictable.is_dir() and not predictable.is_symlink():
            assert list(predictable.iterdir()) == []


HOWS = ["open directory", "symlink", "during its life"]


@pytest.mark.parametrize("how", HOWS)
def test_a_users_instance_keeps_its_jobs_directories_from_another_user(
    other_users: tuple[User, User], planted: list[Path], how: str
) -> None:
    victim, attacker = other_users
    state_dir = victim.mkdir(victim.home / f"state-{how.replace(' ', '-')}")
    state_dir.rmdir()  # the instance makes it

    def run_job(uri: str) -> subprocess.CompletedProcess[str]:
        return victim.pflux("run", "sh", "-c", JOB, PFLUX_URI=uri)

    _attack(
        victim.uid,
        attacker,
        state_dir=state_dir,
        how=how,
        start=lambda: victim.instance(state_dir),
        run_job=run_job,
        planted=planted,
    )


@pytest.mark.parametrize("how", HOWS)
def test_roots_instance_keeps_its_jobs_directories_from_another_user(
    other_users: tuple[User, User],
    planted: list[Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    _, attacker = other_users
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    state_dir = tmp_path / "state"

    def run_job(uri: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(PFLUX), "run", "sh", "-c", JOB],
            env=environ(PFLUX_URI=uri),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    _attack(
        0,
        attacker,
        state_dir=state_dir,
        how=how,
        start=lambda: LiveInstance(state_dir),
        run_job=run_job,
        planted=planted,
    )


@pytest.mark.parametrize("how", ["open directory", "symlink"])
def test_a_restart_does_not_take_the_jobs_directory_another_user_made_under_its_name(
    other_users: tuple[User, User], planted: list[Path], how: str
) -> None:
    victim, attacker = other_users
    state_dir = victim.home / f"restarted-{how.replace(' ', '-')}"
    loot = attacker.mkdir(attacker.home / f"loot-restart-{how.replace(' ', '-')}", 0o777)
    with victim.instance(state_dir) as live:
        job = victim.pflux("run", "sh", "-c", JOB, PFLUX_URI=live.uri)
        assert job.returncode == 0, job.stderr
        first = Path(job.stdout.splitlines()[0])
    assert not first.exists()  # removed as the instance stopped; its name is known
    planted.append(first)
    proc = _plant(attacker, first, how, loot)
    assert proc.returncode == 0, proc.stderr
    with victim.instance(state_dir) as live:
        job = victim.pflux("run", "sh", "-c", JOB, PFLUX_URI=live.uri)
        assert job.returncode == 0, job.stderr
        parent, status = job.stdout.splitlines()
    assert Path(parent) != first
    assert status == f"{victim.uid} 700 directory"
    assert list(loot.iterdir()) == []
    if how == "open directory":
        assert list(first.iterdir()) == []
