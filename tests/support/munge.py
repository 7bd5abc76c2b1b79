"""A MUNGE daemon for the tests that sign job requests (``_pfluxcore.sign``).

One answering on the default socket is used as it is. Where none answers and
the tests run as root, ``/usr/sbin/munged`` is started as the ``munge`` user
(as root with ``--force`` where there is no such user) and left running: other
test sessions on this host may be using it by the time this one ends, and a
later one finds it. Elsewhere the tests that need it are skipped, saying why.
"""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

import pytest
from _pfluxcore.sign import munge_available

MUNGED = Path("/usr/sbin/munged")
SOCKET_DIR = Path("/run/munge")


def _start() -> str:
    """Start munged; what went wrong, or ``""``."""
    try:
        user = pwd.getpwnam("munge")
    except KeyError:
        argv, owner = [str(MUNGED), "--force"], (0, 0)
    else:
        argv, owner = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}",
                       "--clear-groups", str(MUNGED)], (user.pw_uid, user.pw_gid)  # fmt: skip
    SOCKET_DIR.mkdir(mode=0o755, exist_ok=True)
    os.chown(SOCKET_DIR, *owner)
    # munged forks and returns once its socket is listening
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    return "" if proc.returncode == 0 else proc.stderr.strip() or f"exit {proc.returncode}"


@pytest.fixture(scope="session")
def munged() -> None:
    """A munged answering on the default socket, or the test is skipped with the reason."""
    why = munge_available()
    if why is None:
        return
    if os.getuid() != 0 or not MUNGED.exists() or why.startswith("MUNGE is not installed"):
        pytest.skip(f"cannot sign job requests: {why}")
    failed = _start()
    why = munge_available()  # another session may have started one first: it answers too
    if why is not None:
        pytest.skip(f"cannot sign job requests: {why} ({MUNGED}: {failed or 'started'})")
