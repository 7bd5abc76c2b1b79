"""The job's directory and output files, made where other users may have been first.

``FLUX_JOB_TMPDIR`` may go in /tmp, where anyone may create the name first:
one already there is taken only if it is the job user's own, mode 0700, and
never in a directory others could replace. An output file in a sticky
directory anyone may write in (/tmp) may have another user's link or file
under its name, to have the job write through the link or into a file they
can read; there, as the kernel's ``protected_symlinks`` and
``protected_regular`` do where they are on, a link is followed only if it is
the job user's own, and a file already there is written only if it is the job
user's own and has no other name (a hard link, perhaps not of their making).
Everywhere else an output file is opened as it always is. An instance's socket
may be in a directory of its own that others may enter (/run/pflux): one there
already is taken only if it is the instance account's own and no one else may
write in it.
"""

from __future__ import annotations

import errno
import os
import stat

__all__ = ["open_output", "private_dir", "socket_dir", "unsafe_parent"]

_SHARED = "in a directory anyone may write in"


def open_output(path: str, *, append: bool) -> int:
    """A descriptor to write ``path``, created mode 0666 less the umask and emptied
    unless ``append``; OSError, with a strerror to show, if it cannot be opened."""
    how = os.O_WRONLY | os.O_CLOEXEC | (os.O_APPEND if append else 0)
    if not _in_shared_directory(path):
        return os.open(path, how | os.O_CREAT | (0 if append else os.O_TRUNC), 0o666)
    try:
        return os.open(path, how | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
    except FileExistsError:
        pass
    try:
        fd = os.open(path, how | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        if os.lstat(path).st_uid != os.geteuid():
            raise OSError(errno.EACCES, f"another user's link {_SHARED}: not followed") from None
        # the user's own link, which nobody else may replace in a sticky directory
        return os.open(path, how | os.O_CREAT | (0 if append else os.O_TRUNC), 0o666)
    st = os.fstat(fd)
    if st.st_uid != os.geteuid():
        os.close(fd)
        raise OSError(errno.EACCES, f"another user's file {_SHARED}: not written")
    if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
        os.close(fd)
        raise OSError(errno.EACCES, f"a file with another name (a link) {_SHARED}: not written")
    if not append and stat.S_ISREG(st.st_mode):
        os.ftruncate(fd, 0)
    return fd


def _in_shared_directory(path: str) -> bool:
    try:
        mode = os.stat(os.path.dirname(path) or ".").st_mode
    except OSError:
        return False  # the open says what is wrong
    return bool(mode & stat.S_ISVTX and mode & stat.S_IWOTH)


def private_dir(path: str) -> str:
    """Make ``path`` mode 0700, or take the one there if it is the user's own, mode 0700;
    "" when done, else why not, naming it."""
    why = unsafe_parent(os.path.dirname(path) or ".")
    if why:
        return f"{path}: {why}"
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        st = os.lstat(path)
        if not (stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()):
            return f"{path}: not a directory of uid {os.geteuid()}'s"
        if st.st_mode & 0o077:
            return f"{path}: mode {st.st_mode & 0o777:04o}, not 0700"
    except OSError as exc:
        return f"{path}: {exc.strerror}"
    return ""


def socket_dir(path: str) -> str:
    """Make ``path`` mode 0755, or take the one there if it is a real directory (no link)
    of the user's own that no one else may write in; "" when done, else why not, naming it."""
    why = unsafe_parent(os.path.dirname(path) or ".")
    if why:
        return f"{path}: {why}"
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode):
            return f"{path}: not a directory (a link or a file)"
        if st.st_uid != os.geteuid():
            return f"{path}: owned by uid {st.st_uid}, not by uid {os.geteuid()}"
        if st.st_mode & 0o022:
            return f"{path}: mode {st.st_mode & 0o777:04o} lets others write in it"
    except OSError as exc:
        return f"{path}: {exc.strerror}"
    else:
        os.chmod(path, 0o755)  # ours: the umask may have taken what others need to connect
    return ""


def unsafe_parent(parent: str) -> str:
    """Why another user could put their own entry in place of one in ``parent`` (it is
    theirs, or writable by them and not sticky, or their link); "" if no one could."""
    try:
        link = os.lstat(parent)
        st = os.stat(parent) if stat.S_ISLNK(link.st_mode) else link
    except OSError as exc:
        return exc.strerror or str(exc)
    uid = os.geteuid()
    if stat.S_ISLNK(link.st_mode) and link.st_uid not in (uid, 0):
        return f"{parent} is a link of uid {link.st_uid}'s"
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid not in (uid, 0) or (mode & 0o022 and not mode & stat.S_ISVTX):
        return f"{parent} (owner uid {st.st_uid}, mode {mode:04o}) lets others replace it"
    return ""
