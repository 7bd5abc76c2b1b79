"""The shell launcher: a warm process that forks one job shell per job.

Starting a Python interpreter costs tens of milliseconds; forking one that has
already imported the shell costs about one. So job-exec starts this process
once (``python -m pflux.exec.launcher FD RECORD_DIR``) and asks it, over a
socket pair, for one shell per job. Messages are lines of text:

- job-exec to launcher: ``spawn ID SPEC`` fork a shell for SPEC, the JSON job
  description ``pflux.shell.main.run`` takes; ``kill ID SIGNUM`` signal that
  job's shell itself (job-exec's last resort when a shell ignores kill
  requests).
- launcher to job-exec: ``exit ID STATUS`` the shell has exited with that
  wait status, or ``exit ID -1 REASON`` if it could not be forked.

The launcher reads only the words it needs and leaves SPEC to the shell: it is
one process serving every job, while the shells run side by side.

The launcher process imports neither asyncio, subprocess nor logging (so
neither threading): each of them adds after-fork work, and page faults, to
every shell it forks. Each shell leads its own session, and both the launcher and the shells are
child subreapers: a task's orphaned descendants are adopted by its shell,
which kills them when the job ends, and the tasks of a shell that died are
adopted by the launcher, which kills them. A shell writes a *record*
(``RECORD_DIR/<id>``: its pid, which is its session id, its start time and
the boot id) before it starts anything, and the launcher removes it once the
shell is gone. A record left behind means the launcher itself died with the
job's session perhaps alive; job-exec kills such sessions before it runs
anything (``kill_recorded``), so that no job ever runs twice.

The launcher runs in its own session, so signals to the broker's process
group miss it and it could outlive the broker, as a later reattach will need.
For now it ends when job-exec's end of the socket closes: it sends SIGTERM to
its shells and kills the tasks they leave, which it adopts, then exits.
"""

from __future__ import annotations

import contextlib
import gc
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import orjson

from pflux.shell.tasks import children, set_subreaper

if TYPE_CHECKING:
    import asyncio
    import logging
    import subprocess

__all__ = ["Launcher", "kill_recorded", "main", "write_record"]

SHUTDOWN_GRACE: Final = 5.0  # seconds shells get to clean up when the launcher ends
_BOOT_ID: Final = "/proc/sys/kernel/random/boot_id"


# --- records of running shells ---------------------------------------------------------


def _log() -> logging.Logger:
    """job-exec's logger, imported only on the broker's side (see the module docstring)."""
    import logging

    return logging.getLogger("pflux.job-exec")


def _read(path: str) -> bytes | None:
    """A small file's bytes (None if it cannot be read), with no Python file objects."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)


def _boot_id() -> str:
    data = _read(_BOOT_ID)
    return data.decode().strip() if data else ""


def _stat(pid: int) -> tuple[int, int] | None:
    """(session id, start time in clock ticks) of a live process; None if gone or a zombie."""
    text = _read(f"/proc/{pid}/stat")
    if not text:
        return None
    fields = text[text.rfind(b")") + 2 :].split()
    if fields[0] == b"Z":
        return None
    return int(fields[3]), int(fields[19])


def write_record(record_dir: str, jobid: int, boot_id: str) -> None:
    """Record the calling shell (a session leader) before it starts any task."""
    pid = os.getpid()
    stat = _stat(pid)
    start = stat[1] if stat is not None else 0
    fd = os.open(os.path.join(record_dir, str(jobid)), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, f"{pid} {start} {boot_id}\n".encode())
    finally:
        os.close(fd)


def _session_members(sid: int, started: int) -> list[int]:
    """The processes of session ``sid`` that belong to the recorded shell's session.

    When the leader (pid == sid) is alive it must have the recorded start time,
    or the session id was reused and nothing is ours. When it is gone, only
    processes started no earlier than it count.
    """
    leader = _stat(sid)
    if leader is not None and (leader[0] != sid or leader[1] != started):
        return []
    members = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        stat = _stat(pid)
        if stat is not None and stat[0] == sid and stat[1] >= started:
            members.append(pid)
    return members


def kill_recorded(record_dir: str, jobid: int | None = None, timeout: float = 5.0) -> list[int]:
    """SIGKILL the sessions of recorded shells (one job's, or all) and remove their records.

    Returns the ids of the jobs that had a record. Waits (up to ``timeout``)
    for the sessions to be gone, so a job is never running when this returns.
    """
    try:
        names = [str(jobid)] if jobid is not None else os.listdir(record_dir)
    except FileNotFoundError:
        return []
    found = []
    boot = _boot_id()
    for name in names:
        path = os.path.join(record_dir, name)
        try:
            pid_text, start_text, record_boot = (_read(path) or b"").decode().split()
        except (UnicodeDecodeError, ValueError):
            with contextlib.suppress(OSError):
                os.unlink(path)
            continue
        if name.isdigit():
            found.append(int(name))
        if record_boot == boot:
            _kill_session(int(pid_text), int(start_text), timeout)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    return found


def _kill_session(sid: int, started: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while members := _session_members(sid, started):
        for pid in members:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            _log().error("processes %s of a job shell session survive SIGKILL", members)
            return
        time.sleep(0.01)  # SIGKILL is delivered asynchronously; the kernel gives no event


# --- job-exec's side -------------------------------------------------------------------


class Launcher:
    """job-exec's end of the launcher: starts it and exchanges JSON lines with it."""

    def __init__(
        self,
        record_dir: str,
        on_exit: Callable[[int, int, str | None], None],
        on_lost: Callable[[], None],
    ) -> None:
        self.record_dir = record_dir
        self._on_exit = on_exit
        self._on_lost = on_lost
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._in = b""
        self._out = bytearray()
        self._closed: asyncio.Event | None = None

    @property
    def running(self) -> bool:
        return self._sock is not None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the launcher process; requests may be sent at once (they wait in the socket)."""
        import asyncio
        import subprocess

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "pflux.exec.launcher",
                    str(theirs.fileno()),
                    self.record_dir,
                ],
                pass_fds=(theirs.fileno(),),
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        ours.setblocking(False)
        self._sock = ours
        self._loop = loop
        self._in = b""
        self._out.clear()
        self._closed = asyncio.Event()
        loop.add_reader(ours.fileno(), self._readable)

    def spawn(self, jobid: int, spec: dict[str, Any]) -> None:
        """Ask for a shell for job ``jobid`` (its exit is reported to ``on_exit``)."""
        self._send(b"spawn %d " % jobid + orjson.dumps(spec) + b"\n")

    def kill(self, jobid: int, signum: int) -> None:
        """Signal the shell of job ``jobid`` itself."""
        self._send(b"kill %d %d\n" % (jobid, signum))

    def _send(self, data: bytes) -> None:
        sock = self._sock
        if sock is None or self._loop is None:
            return
        if self._out:
            self._out += data
            return
        try:
            sent = sock.send(data)
        except BlockingIOError:
            sent = 0
        except OSError:
            return  # the reader sees the end and reports the loss
        if sent < len(data):
            self._out += data[sent:]
            self._loop.add_writer(sock.fileno(), self._writable)

    def _writable(self) -> None:
        sock = self._sock
        if sock is None or self._loop is None:
            return
        try:
            sent = sock.send(self._out)
        except BlockingIOError:
            return
        except OSError:
            sent = len(self._out)
        del self._out[:sent]
        if not self._out:
            self._loop.remove_writer(sock.fileno())

    def _readable(self) -> None:
        assert self._sock is not None
        try:
            data = self._sock.recv(1 << 20)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._close()
            self._on_lost()
            return
        lines = (self._in + data).split(b"\n")
        self._in = lines.pop()
        for line in lines:
            words = line.split(b" ", 3)
            try:
                if words[0] != b"exit":
                    raise ValueError(words[0])
                jobid, status = int(words[1]), int(words[2])
            except (ValueError, IndexError):
                _log().error("shell launcher sent garbage: %r", line[:200])
                continue
            self._on_exit(jobid, status, words[3].decode() if len(words) > 3 else None)

    def _close(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None and self._loop is not None:
            self._loop.remove_reader(sock.fileno())
            if self._out:
                self._loop.remove_writer(sock.fileno())
            sock.close()
        if self._closed is not None:
            self._closed.set()
        proc = self._proc
        if proc is not None and proc.poll() is None and self._loop is not None:
            # it has closed its end and is exiting: reap it off the loop
            self._loop.run_in_executor(None, proc.wait)

    async def stop(self) -> None:
        """End the launcher: it cleans up its shells, then closes its end; reap it."""
        import asyncio
        import subprocess

        sock, proc, closed = self._sock, self._proc, self._closed
        if sock is not None and closed is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_WR)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(closed.wait(), SHUTDOWN_GRACE + 5.0)
            self._close()
        if proc is not None and proc.poll() is None:
            try:
                await asyncio.to_thread(proc.wait, 5.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                await asyncio.to_thread(proc.wait)
        self._proc = None


# --- the launcher process ----------------------------------------------------------------


class _Server:
    """The launcher's loop: spawn requests in, exits out.

    It waits on pidfds, not SIGCHLD: with no signal handler installed, a
    forked shell has nothing to undo, and SIGTERM simply ends it.
    """

    def __init__(self, sock: socket.socket, record_dir: str) -> None:
        self.sock = sock
        self.record_dir = record_dir
        self.boot_id = _boot_id()
        self.shells: dict[int, int] = {}  # pid -> job id
        self.by_job: dict[int, int] = {}  # job id -> pid
        self.pidfds: dict[int, int] = {}  # pidfd -> pid
        self.poller = select.epoll()
        self.poller.register(sock.fileno(), select.EPOLLIN)
        self.inbuf = b""
        self.closing = False

    def run(self) -> int:
        while not self.closing:
            self._poll(-1)
        self._shutdown()
        return 0

    def _poll(self, timeout: float) -> None:
        exited = []
        for fd, _ in self.poller.poll(timeout):
            if fd in self.pidfds:
                exited.append(self._reap(fd))
            elif not self.closing:
                self._on_socket()
        if any(status != 0 for _, status in exited):
            self._kill_orphans()
        for jobid, status in exited:
            if status != 0:  # a shell that ends well removes its own record
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(self.record_dir, str(jobid)))
            self._send(b"exit %d %d\n" % (jobid, status))

    def _on_socket(self) -> None:
        try:
            data = self.sock.recv(1 << 20)
        except OSError:
            data = b""
        if not data:
            self.closing = True
            self.poller.unregister(self.sock.fileno())
            return
        lines = (self.inbuf + data).split(b"\n")
        self.inbuf = lines.pop()
        for line in lines:
            op, jobid, rest = line.split(b" ", 2)
            if op == b"spawn":
                self._spawn(int(jobid), rest)
            elif op == b"kill":
                pid = self.by_job.get(int(jobid))
                if pid is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(pid, int(rest))

    def _send(self, line: bytes) -> None:
        with contextlib.suppress(OSError):
            self.sock.sendall(line)

    def _spawn(self, jobid: int, spec: bytes) -> None:
        try:
            pid = os.fork()
        except OSError as exc:
            self._send(b"exit %d -1 fork: %s\n" % (jobid, str(exc.strerror).encode()))
            return
        if pid == 0:
            self._child(jobid, spec)
        pidfd = os.pidfd_open(pid)
        self.poller.register(pidfd, select.EPOLLIN)
        self.pidfds[pidfd] = pid
        self.shells[pid] = jobid
        self.by_job[jobid] = pid

    def _child(self, jobid: int, spec_text: bytes) -> None:
        """In the forked shell: drop the launcher's state, record the shell, run it."""
        code = 1
        try:
            os.setsid()
            self.poller.close()
            self.sock.close()
            for fd in self.pidfds:
                os.close(fd)
            write_record(self.record_dir, jobid, self.boot_id)
            spec = orjson.loads(spec_text)
            spec["record"] = os.path.join(self.record_dir, str(jobid))
            from pflux.shell.main import run

            code = run(spec)
        except BaseException:
            import traceback

            sys.stderr.write(f"pflux-shell: job shell for job {jobid} failed:\n")
            traceback.print_exc()
        finally:
            os._exit(code)

    def _reap(self, pidfd: int) -> tuple[int, int]:
        """(job id, wait status) of the shell whose pidfd is readable."""
        pid = self.pidfds.pop(pidfd)
        self.poller.unregister(pidfd)
        os.close(pidfd)
        _, status = os.waitpid(pid, 0)
        jobid = self.shells.pop(pid)
        del self.by_job[jobid]
        return jobid, status

    def _kill_orphans(self) -> None:
        """Kill and reap adopted processes, the leftovers of shells that died, before reporting."""
        while orphans := [pid for pid in children() if pid not in self.shells]:
            for pid in orphans:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            for pid in orphans:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)

    def _shutdown(self) -> None:
        """job-exec is gone: end the shells, killing the tasks they leave; SIGKILL if need be."""
        for signum in (signal.SIGTERM, signal.SIGKILL):
            for pid in self.shells:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signum)
            deadline = time.monotonic() + SHUTDOWN_GRACE
            while self.shells and time.monotonic() < deadline:
                self._poll(deadline - time.monotonic())
        self._kill_orphans()


def main(argv: list[str]) -> int:
    """``python -m pflux.exec.launcher FD RECORD_DIR``."""
    if len(argv) != 3:
        sys.stderr.write("usage: python -m pflux.exec.launcher FD RECORD_DIR\n")
        return 2
    sock = socket.socket(fileno=int(argv[1]))
    import pflux.shell.main  # noqa: F401  (warm: every shell forked from here has it)

    if not set_subreaper():
        sys.stderr.write("pflux-launcher: cannot adopt orphaned processes\n")
    os.makedirs(argv[2], exist_ok=True)
    # Objects made so far stay shared with the forked shells: nothing collects them
    # (which would write to their pages), and the launcher makes no cycles worth collecting.
    gc.freeze()
    gc.disable()
    return _Server(sock, argv[2]).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
