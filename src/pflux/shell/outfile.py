"""A task's output file, opened so that another user cannot turn it against the job.

In a sticky directory anyone may write in (/tmp), another user may have put a
link or a file under the name first, to have the job write through the link
or into a file they can read. There, as the kernel's ``protected_symlinks``
and ``protected_regular`` do where they are on, a link is followed only if it
is the job user's own, and a file already there is written only if it is the
job user's own and has no other name (a hard link, perhaps not of their
making). Everywhere else the file is opened as it always is.
"""

from __future__ import annotations

import errno
import os
import stat

__all__ = ["open_output"]

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
