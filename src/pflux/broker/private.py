"""Files and directories of the state directory that only the instance owner may read.

The KVS holds every jobspec, and a jobspec holds its submitter's whole
environment, so the databases are created mode 0600 before SQLite opens them
(SQLite gives a database's ``-wal`` and ``-shm`` its mode). The state directory
holds the socket: pflux creates it 0700 (where guests may connect the connector
makes it ``GUEST_DIRECTORY_MODE``, and all else in it the owner's alone:
``open_to_guests``), and otherwise never changes the mode of one it did not
create; one that others could write in is refused, since they could put their
own socket or database in its place. A state directory that holds
anything pflux did not make is refused too, before anything is written in it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from pathlib import Path

from pflux.errors import PfluxError

log = logging.getLogger("pflux.state")

GUEST_DIRECTORY_MODE = 0o711  # others may pass through to the socket, and list nothing
# SQLite's files beside a database, and the KVS's redo log beside its own
SIDE_FILES = ("-wal", "-shm", "-journal", "-redo")


MARKER = "pflux-state"  # in a state directory: pflux made it, and may restart from it
_MADE = ("local", "exec")  # what pflux makes in a state directory besides its databases
_DATABASES = ("kvs.sqlite", "job-list.sqlite")  # each with its side files, .lock and .state
_NAMED = 4  # foreign names that a refusal lists


def state_directory(path: Path) -> None:
    """``directory(path)``, refused unless it is new, empty or pflux's own (PfluxError
    naming what is there): ``--state-dir /etc`` must not put databases among its files.

    pflux marks one it takes with ``pflux-state``; one without the mark is taken
    if it holds nothing but what pflux makes.
    """
    directory(path)
    if os.path.lexists(path / MARKER):
        return
    foreign = sorted(name for name in os.listdir(path) if not _made_by_pflux(name))
    if foreign:
        named = ", ".join(foreign[:_NAMED]) + (", ..." if len(foreign) > _NAMED else "")
        raise PfluxError(
            f"--state-dir {path}: not a pflux state directory (it holds {named}):"
            " name a new or empty directory, or one pflux made"
        )
    fd = os.open(path / MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, b"a pflux instance's state directory\n")
    finally:
        os.close(fd)


def open_to_guests(socket: Path) -> None:
    """Let other users reach ``socket`` through its directory and nothing else there:
    the directory ``GUEST_DIRECTORY_MODE``, and whatever else it holds (job-exec's
    ``exec``, made with the umask) the owner's alone."""
    directory = socket.parent
    for entry in os.scandir(directory):
        if entry.name == socket.name:
            continue
        st = entry.stat(follow_symlinks=False)
        if stat.S_ISDIR(st.st_mode) and st.st_mode & 0o077:
            os.chmod(entry.path, 0o700)
        elif stat.S_ISREG(st.st_mode) and st.st_mode & 0o077:
            os.chmod(entry.path, 0o600)
    os.chmod(directory, GUEST_DIRECTORY_MODE)


def _made_by_pflux(name: str) -> bool:
    return name in _MADE or name.startswith(_DATABASES)


def directory(path: Path) -> None:
    """Create ``path`` mode 0700, or check that an existing directory is safe to serve in."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _check_place(path)
        os.mkdir(path, 0o700)
    except FileExistsError:
        _check_directory(path)
    except OSError as exc:
        raise PfluxError(f"{path}: cannot create the state directory: {exc.strerror}") from None
    else:
        os.chmod(path, 0o700)  # ours: the umask may have taken bits the owner needs


def _check_place(path: Path) -> None:
    """PfluxError if another user could put their own directory in ``path``'s place: its
    parent must be this user's or root's, writable by no one else unless sticky (/tmp),
    and ``path``, if a link, this user's or root's."""
    parent = path.absolute().parent
    st = os.stat(parent)
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid not in (os.getuid(), 0) or (mode & 0o022 and not mode & stat.S_ISVTX):
        raise PfluxError(
            f"{path}: unsafe place for a state directory: {parent} (owner uid {st.st_uid},"
            f" mode {mode:04o}) lets others replace it; name one in a directory of your own"
            " or root's that others cannot write in (or a sticky one, as /tmp)"
        )
    with contextlib.suppress(FileNotFoundError):
        link = os.lstat(path)
        if stat.S_ISLNK(link.st_mode) and link.st_uid not in (os.getuid(), 0):
            raise PfluxError(
                f"{path}: unsafe state directory: a link of uid {link.st_uid}'s, who could"
                " point it elsewhere"
            )


def _check_directory(path: Path) -> None:
    """PfluxError unless ``path`` is a directory of this user's that no one else can write in."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise PfluxError(f"{path}: cannot use the state directory: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise PfluxError(f"{path}: the state directory is not a directory")
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid != os.getuid() or mode & 0o022:
        raise PfluxError(
            f"{path}: unsafe state directory (owner uid {st.st_uid}, mode {mode:04o}): it must"
            f" be owned by uid {os.getuid()} and not writable by group or others, since it"
            " holds the instance's socket; name a directory of your own, or one that does not"
            " exist yet (pflux creates it mode 0700)"
        )


def database(path: Path) -> None:
    """Make sure the SQLite database ``path`` and its side files are readable by the owner only.

    A missing database is created empty, mode 0600, for SQLite to open; an
    existing one whose mode lets others read it is made 0600 (pflux's own files,
    in the owner's state directory).
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        _tighten(path, fd)
    finally:
        os.close(fd)
    for suffix in SIDE_FILES:
        side = Path(f"{path}{suffix}")
        with contextlib.suppress(FileNotFoundError):
            fd = os.open(side, os.O_RDONLY | os.O_CLOEXEC)
            try:
                _tighten(side, fd)
            finally:
                os.close(fd)


def _tighten(path: Path, fd: int) -> None:
    st = os.fstat(fd)
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077 and st.st_uid == os.getuid():
        log.warning("%s: mode %04o lets others read it; making it 0600", path, mode)
        os.fchmod(fd, 0o600)
