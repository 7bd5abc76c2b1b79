"""Where a guest's shell meets a restarted job-exec (``pflux.exec.rendezvous``), against the
other local users: ``exec/guests`` is the instance account's, in which no one else makes,
or lists, an entry (a job's path cannot be taken first), and job-exec takes a job's
connection only from the process the journal names as its shell: neither another user
nor another process of the job's user speaks for it, and only one connection is taken.
Each user holds the directory's descriptor, as a guest's shell is given it."""

from __future__ import annotations

import asyncio
import os
import socket
import stat
import subprocess
import time
from pathlib import Path

from pflux.exec.rendezvous import Rendezvous
from pflux.protocol import shelljournal as journal
from support.users import User

KEY = 5 << 24

MAKE = """
import os, socket, sys
place = f"/proc/self/fd/{sys.argv[1]}"
for attempt in ("bind", "create", "list"):
    try:
        if attempt == "bind":
            socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET).bind(f"{place}/{sys.argv[2]}")
        elif attempt == "create":
            open(f"{place}/{sys.argv[2]}", "x").close()
        else:
            os.listdir(place)
        print(attempt, "done")
    except PermissionError:
        print(attempt, "refused")
"""

CONNECT = """
import socket, sys
if sys.argv[3:] == ["wait"]:
    sys.stdin.readline()
sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
sock.settimeout(60)
try:
    sock.connect(f"/proc/self/fd/{sys.argv[1]}/{sys.argv[2]}")
except OSError as exc:
    print(type(exc).__name__)
    sys.exit()
print("met" if sock.recv(64) == b"welcome" else "hung up")
"""


def as_user(user: User, code: str, fd: int, *args: str, key: int = KEY) -> subprocess.Popen[str]:
    """Python ``code`` as ``user``, holding descriptor ``fd`` (its first argument; ``key``
    its second)."""
    return subprocess.Popen(
        [user.python, "-c", code, str(fd), str(key), *args],
        user=user.uid,
        group=user.gid,
        extra_groups=[],
        cwd=user.home,
        env=user.env(),
        pass_fds=[fd],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def journalled(proc: subprocess.Popen[str]) -> journal.Entry:
    """A journal's entry for ``proc`` as a job's shell (recorded after its start)."""
    return (proc.pid, time.clock_gettime_ns(time.CLOCK_BOOTTIME), journal.boot_id(), True)


def said(proc: subprocess.Popen[str], line: str = "") -> str:
    out, _ = proc.communicate(line, timeout=120)
    return out.strip()


def test_no_other_user_makes_or_lists_an_entry_at_the_rendezvous(
    other_users: tuple[User, User], tmp_path: Path
) -> None:
    rendezvous = Rendezvous(str(tmp_path), lambda key, conn: conn.close())
    fd = rendezvous.directory()
    assert fd >= 0
    assert stat.S_IMODE(os.fstat(fd).st_mode) == 0o711
    for user in other_users:
        assert said(as_user(user, MAKE, fd)).split("\n") == [
            "bind refused",
            "create refused",
            "list refused",
        ]
    assert not os.listdir(tmp_path / "guests")


def test_a_jobs_connection_is_taken_only_from_its_shell_and_once(
    other_users: tuple[User, User], tmp_path: Path
) -> None:
    stranger, guest = other_users
    met: list[int] = []

    def on_met(key: int, conn: socket.socket) -> None:
        met.append(key)
        conn.send(b"welcome")
        conn.close()

    async def meet() -> None:
        rendezvous = Rendezvous(str(tmp_path), on_met)
        fd = rendezvous.directory()
        shell = as_user(guest, CONNECT, fd, "wait")  # the job's shell, as the journal names it
        loop = asyncio.get_running_loop()
        rendezvous.listen(loop, {KEY: (journalled(shell), guest.uid)})
        path = tmp_path / "guests" / str(KEY)
        assert stat.S_IMODE(path.stat().st_mode) == 0o666
        # another user, then another process of the job's user: each hung up on
        for impostor in (stranger, guest):
            assert await asyncio.to_thread(said, as_user(impostor, CONNECT, fd)) == "hung up"
        assert not met
        # the process the journal names, for a job of another user's: hung up on too
        other = KEY + 1
        wrong = as_user(guest, CONNECT, fd, "wait", key=other)
        rendezvous.listen(loop, {other: (journalled(wrong), stranger.uid)})
        assert await asyncio.to_thread(said, wrong, "go\n") == "hung up"
        assert not met
        assert await asyncio.to_thread(said, shell, "go\n") == "met"
        assert met == [KEY]
        assert not path.exists()  # taken once: a second connection finds nobody
        second = await asyncio.to_thread(said, as_user(guest, CONNECT, fd))
        assert second in ("FileNotFoundError", "ConnectionRefusedError"), second
        rendezvous.close()

    asyncio.run(meet())
