"""``--state-dir`` naming a directory that is not the starter's own pflux state: refused,
and nothing in it changed."""

from __future__ import annotations

from pathlib import Path

from support.instance import console
from support.users import User


def _listing(path: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.name: (p.read_bytes() if p.is_file() else b"", p.lstat().st_mtime_ns)
        for p in path.iterdir()
    }


def _holding_files(user: User, name: str) -> Path:
    place = user.mkdir(user.home / name)
    for file in ("notes", "passwd"):
        (place / file).write_text(f"{user.name}'s {file}")
    return place


def test_a_users_own_directory_of_other_files_is_refused(other_users: tuple[User, User]) -> None:
    victim, _ = other_users
    place = _holding_files(victim, "own-files")
    before = _listing(place)
    proc = victim.pflux("start", f"--state-dir={place}", "true")
    assert proc.returncode == 1
    assert proc.stderr == (
        f"pflux-start: ERROR: --state-dir {place}: not a pflux state directory (it holds"
        " notes, passwd): name a new or empty directory, or one pflux made\n"
    )
    assert _listing(place) == before


def test_root_naming_a_users_directory_is_refused(other_users: tuple[User, User]) -> None:
    victim, _ = other_users
    place = _holding_files(victim, "for-root")
    before = _listing(place)
    proc = console("start", f"--state-dir={place}", "true")
    assert proc.returncode == 1
    assert proc.stderr.startswith(
        f"pflux-start: ERROR: {place}: unsafe state directory (owner uid {victim.uid}, mode 0700)"
    )
    assert _listing(place) == before


def test_another_user_naming_the_victims_state_directory_is_refused(
    other_users: tuple[User, User],
) -> None:
    victim, attacker = other_users
    state = victim.home / "victims-state"
    made = victim.pflux("start", f"--state-dir={state}", "true")
    assert made.returncode == 0, made.stderr
    before = _listing(state)
    proc = attacker.pflux("start", f"--state-dir={state}", "true")
    assert proc.returncode == 1
    assert proc.stderr.startswith(
        f"pflux-start: ERROR: {state}: unsafe state directory (owner uid {victim.uid}, mode 0700)"
    )
    assert _listing(state) == before
