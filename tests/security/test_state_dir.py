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
        f"pflux-start: ERROR: {place}: unsafe place for a state directory: {victim.home}"
        f" (owner uid {victim.uid}, mode 0755)"
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
        f"pflux-start: ERROR: {state}: unsafe place for a state directory: {victim.home}"
        f" (owner uid {victim.uid}, mode 0755)"
    )
    assert _listing(state) == before


def test_a_place_another_user_controls_is_refused(other_users: tuple[User, User]) -> None:
    victim, attacker = other_users
    open_place = attacker.mkdir(attacker.home / "open-to-all", 0o777)
    proc = victim.pflux("start", f"--state-dir={open_place / 'state'}", "true")
    assert proc.returncode == 1
    assert proc.stderr.startswith(
        f"pflux-start: ERROR: {open_place / 'state'}: unsafe place for a state directory:"
        f" {open_place} (owner uid {attacker.uid}, mode 0777)"
    )
    assert list(open_place.iterdir()) == []
    # a link of the attacker's to an empty directory of the victim's, to point away later
    empty = victim.mkdir(victim.home / "empty-for-a-link")
    lure = attacker.home / "lure"
    made = attacker.code(
        "import os, sys; os.symlink(sys.argv[1], sys.argv[2])", str(empty), str(lure)
    )
    assert made.returncode == 0, made.stderr
    shared = attacker.home.parent / "sticky-for-a-link"
    shared.mkdir()
    shared.chmod(0o1777)
    moved = attacker.code(
        "import os, sys; os.rename(sys.argv[1], sys.argv[2])", str(lure), str(shared / "lure")
    )
    assert moved.returncode == 0, moved.stderr
    proc = victim.pflux("start", f"--state-dir={shared / 'lure'}", "true")
    assert proc.returncode == 1
    assert proc.stderr.startswith(
        f"pflux-start: ERROR: {shared / 'lure'}: unsafe state directory: a link of"
        f" uid {attacker.uid}'s"
    )
    assert list(empty.iterdir()) == []
