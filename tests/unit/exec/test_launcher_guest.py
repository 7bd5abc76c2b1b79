"""A guest's job through the launcher: the shell runs where the privileged helper puts it,
on sockets of its own, its records come to job-exec on a socket of its job's own, which
job-exec made and passed with the job's SPAWN_AS, and only its own job's records are taken
(``pflux.exec.guestrecords``, as job-exec reads them).

The helper here is a stand-in of the test's own user (the real one, run as root, is
tested in tests/security/test_imp.py): it takes the launcher's request as the helper
does and runs the job shell as the helper's child does, without changing user.
"""

from __future__ import annotations

import array
import contextlib
import marshal
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pflux.exec.guestrecords import UNHEARD, GuestRecords
from pflux.protocol import shelljournal as journal
from pflux.protocol import shellwire as wire
from pflux.protocol.impwire import encode_description, spawn_as
from pflux.protocol.shellwire import IMP_SOCKET, Description
from support.procs import pidfd_wait
from support.shells import description

JOB = 1 << 24
OTHER = JOB + 1
SECOND = 2 << 24

# the guest's shell as the helper's child runs it (less the change of user); J "forge"
# makes it send a record of another job first, as a guest who took over its shell could
GUEST_SHELL = """
import marshal, os, socket, sys
import pflux
from pflux.protocol import impwire, shellwire as wire
from pflux.shell.context import Context
from pflux.shell.job import Shell
from pflux.imp.server import next_guest_job
control, records, key = map(int, sys.argv[1:4])
uri, userid, signed, data = impwire.split_request(sys.stdin.buffer.read())
job = impwire.decode_description(data)
os.setsid()
sock = socket.socket(fileno=records)
if signed == "forge":
    sock.send(wire.record(wire.OUTPUT, key + 1, b"o\\0\\0\\0\\0forged\\n"))
ctx = Context(journal=-1, boot=b"boot", devnull=os.open(os.devnull, os.O_RDONLY),
              cpus=tuple(os.sched_getaffinity(0)), cwd="/", path=os.environ.get("PATH"),
              records=sock, spool="", exec_dir=-1)
launcher = socket.socket(fileno=control)
while True:  # J "reuse": done with its job, it takes the next, as the helper's shells do
    shell = Shell(key, ctx, launcher)
    code = shell.run(marshal.dumps(tuple(job)))
    if code or signed != "reuse" or not shell.reset():
        sys.exit(code)
    launcher.send(wire.record(wire.DONE, key))
    given = next_guest_job(launcher)
    if given is None:
        sys.exit(0)
    key, payload, fds = given
    os.dup2(fds[0], records)  # the job's own records socket
    os.close(fds[0])
    uri, userid, signed, data = impwire.split_request(payload)
    job = impwire.decode_description(data)
"""


class Helper:
    """A stand-in helper listening at ``path``: runs each request's shell, or refuses."""

    def __init__(self, path: Path, refuse: bytes = b"") -> None:
        self.refuse = refuse
        self.took = threading.Event()  # a request has come
        self.go = threading.Event()  # ... and may be served
        self.go.set()
        self.answered = threading.Event()  # ... and was answered
        self.requests: list[bytes] = []
        self.shells: list[subprocess.Popen[bytes]] = []
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.listener.bind(str(path))
        self.listener.listen(8)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                self._one(conn)

    def _one(self, conn: socket.socket) -> None:
        data, ancillary, _, _ = conn.recvmsg(1 << 16, socket.CMSG_SPACE(8))
        fds = [
            int.from_bytes(cdata[i : i + 4], sys.byteorder)
            for _, _, cdata in ancillary
            for i in range(0, len(cdata), 4)
        ]
        _, jobid, rank, length = wire.HEADER.unpack_from(data)
        payload = data[wire.HEADER.size :]
        while len(payload) < length:
            payload += conn.recv(1 << 16)
        key = wire.shell_key(jobid, rank)
        self.requests.append(payload)
        self.took.set()
        self.go.wait(30)
        if self.refuse:
            conn.send(wire.record(wire.EXCEPTION, key, self.refuse))
        else:
            argv = [sys.executable, "-c", GUEST_SHELL, str(fds[0]), str(fds[1]), str(key)]
            shell = subprocess.Popen(argv, pass_fds=fds, stdin=subprocess.PIPE)
            assert shell.stdin is not None
            shell.stdin.write(payload)
            shell.stdin.close()
            self.shells.append(shell)
            try:
                conn.send(wire.record(wire.STARTED, key, b"%d" % shell.pid))
            except OSError:  # as the helper: a launcher that died could not journal it
                shell.kill()
        for fd in fds:
            os.close(fd)
        self.answered.set()

    def close(self) -> None:
        self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        self.thread.join(10)
        for shell in self.shells:
            shell.wait(30)


class Launcher:
    """A launcher driven as job-exec drives it (``test_launcher.Launcher``, in short)."""

    def __init__(self, tmp: Path, imp: Path | None) -> None:
        self.tmp = tmp
        self.journal = tmp / "journal"
        env = dict(os.environ)
        if imp is not None:
            env[IMP_SOCKET] = str(imp)
        ours, theirs = socket.socketpair()
        self.records, shells = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        passed = [theirs.fileno(), shells.fileno()]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pflux.shell.launcher", *map(str, passed), str(self.journal)],
            pass_fds=passed,
            env=env,
        )
        theirs.close()
        shells.close()
        self.sock = ours
        self.buffer = b""
        self.got: list[wire.Record] = []  # every record that came, in order
        self.acked: dict[int, int] = {}  # each shell's records' bytes, acknowledged
        self.guests: dict[int, GuestRecords] = {}  # guests' shells' records sockets, by fd
        self.told: list[wire.Record] = []  # what the launcher itself sent, on either socket
        self.killed = False  # the test killed it: its socket's end is no failure

    def send(self, kind: bytes, payload: bytes, jobid: int = JOB) -> None:
        self.sock.sendall(wire.record(kind, jobid, payload))

    def guest_job(self, command: list[str], signed: str = "J", jobid: int = JOB) -> None:
        """SPAWN_AS, with the shell's end of the job's records socket, as job-exec sends it."""
        plain = encode_description(Description(*marshal.loads(self.job(command, jobid))))
        data = wire.record(wire.SPAWN_AS, jobid, spawn_as(os.getuid(), signed, plain))
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        guest = GuestRecords(jobid, ours)
        self.guests[ours.fileno()] = guest
        rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [theirs.fileno()]))]
        sent = self.sock.sendmsg([data], rights)
        theirs.close()
        self.sock.sendall(data[sent:])

    def job(self, command: list[str], jobid: int = JOB) -> bytes:
        return description(jobid, command, self.tmp)

    def until(self, kind: bytes, jobid: int = JOB, timeout: float = 30.0) -> list[wire.Record]:
        """Job ``jobid``'s records up to its first of ``kind`` (ACKing them as they come)."""
        mine: list[wire.Record] = []
        start = 0
        while True:
            for record in self.got[start:]:
                start += 1
                if record[1] == jobid:
                    mine.append(record)
                    if record[0] == kind:
                        return mine
            watched = [self.records, *([] if self.sock.fileno() < 0 else [self.sock]), *self.guests]
            ready, _, _ = select.select(watched, [], [], timeout)
            assert ready, f"nothing came in {timeout} s; got {self.got}"
            if self.records in ready:
                data, ancillary, _, _ = self.records.recvmsg(1 << 20, socket.CMSG_SPACE(4))
                assert not ancillary, "the shells' socket passes no descriptor"
                found = wire.split(data)[0]
                self.told += [record for record in found if record[1] not in self.guest_keys]
                self._acknowledge(found)
            elif ready[0] in self.guests:
                fd = ready[0]
                guest = self.guests[fd]
                found = guest.read(memoryview(bytearray(1 << 20)))
                self._acknowledge(found)
                if guest.ended:  # as job-exec's LauncherLink does
                    del self.guests[fd]
                    guest.close()
                    if guest.forged:
                        self.send(wire.TERMINATE, b"9", guest.key)
                    if guest.note:  # the launcher's word, sent first, is the job's
                        found.append((wire.EXITED, guest.key, guest.note))
            else:
                try:
                    data = self.sock.recv(65536)
                except ConnectionResetError:
                    data = b""
                if not data:
                    assert self.killed, "the launcher closed its end"
                    self.sock.close()
                    continue
                found, used = wire.split(self.buffer + data)
                self.buffer = (self.buffer + data)[used:]
                self.told += found
            self.got += found

    @property
    def guest_keys(self) -> set[int]:
        return {guest.key for guest in self.guests.values()}

    def _acknowledge(self, found: list[wire.Record]) -> None:
        for _, key, payload in found:  # acknowledged as the KVS would hold them
            self.acked[key] = self.acked.get(key, 0) + wire.HEADER.size + len(payload)
            ack = wire.record(wire.ACK, key, b"%d" % self.acked[key])
            guests = [guest for guest in self.guests.values() if guest.key == key]
            if guests:  # on the job's own socket, as job-exec sends a guest's shell its ACKs
                with contextlib.suppress(OSError):
                    guests[0].sock.send(ack)
            else:
                self.sock.sendall(ack)

    def close(self) -> int:
        for guest in self.guests.values():
            guest.close()
        self.send(wire.QUIT, b"", jobid=0)
        self.sock.close()
        status = self.proc.wait(timeout=30)
        self.records.close()
        return status


@pytest.fixture
def helper(tmp_path: Path) -> Iterator[Helper]:
    started = Helper(tmp_path / "imp")
    yield started
    started.close()


def test_a_guests_job_runs_through_the_helper_and_its_records_come_back(
    tmp_path: Path, helper: Helper
) -> None:
    launcher = Launcher(tmp_path, tmp_path / "imp")
    launcher.guest_job(["sh", "-c", "echo out; exit 3"])
    got = launcher.until(wire.EXITED)
    assert got[0][0] == wire.STARTED
    assert got[-1][2] == b"%d" % (3 << 8)
    assert (wire.OUTPUT, JOB, b"o\0\0\0\0out\n") in got
    # the launcher added its URI line (none on rank 0) before J and the description
    assert helper.requests[0].startswith(b"\n%d\nJ\n{" % os.getuid())
    assert launcher.close() == 0
    assert journal.live(str(launcher.journal)) == {}  # journalled, and its end too


def test_a_guests_shell_that_sends_another_jobs_record_is_ended_and_the_other_runs_on(
    tmp_path: Path, helper: Helper
) -> None:
    launcher = Launcher(tmp_path, tmp_path / "imp")
    marker = tmp_path / "other-done"
    launcher.send(wire.SPAWN, launcher.job(["sh", "-c", f"sleep 1; touch {marker}"], OTHER), OTHER)
    launcher.until(wire.STARTED, OTHER)
    launcher.guest_job(["sleep", "100"], signed="forge")
    got = launcher.until(wire.EXITED)
    assert got[-1][2] == b"-1 job shell sent records not its job's"
    assert pidfd_wait([shell.pid for shell in helper.shells], 20) == []  # it ended
    other = launcher.until(wire.EXITED, OTHER)
    assert other[-1][2] == b"0"
    assert marker.exists()
    assert not [r for r in launcher.got if r[0] == wire.OUTPUT and b"forged" in r[2]]
    assert launcher.close() == 0


def test_a_guests_shell_done_with_a_job_runs_the_users_next_without_the_helper(
    tmp_path: Path, helper: Helper
) -> None:
    launcher = Launcher(tmp_path, tmp_path / "imp")
    launcher.guest_job(["sh", "-c", "echo $PPID"], signed="reuse")
    first = launcher.until(wire.EXITED)
    deadline = time.monotonic() + 30
    while journal.live(str(launcher.journal)) and time.monotonic() < deadline:
        time.sleep(0.01)  # the job's end is journalled when its shell says DONE
    assert journal.live(str(launcher.journal)) == {}
    launcher.guest_job(["sh", "-c", "echo $PPID"], signed="reuse", jobid=SECOND)
    second = launcher.until(wire.EXITED, SECOND)
    assert len(helper.requests) == 1  # the second went to the first's shell
    # each job's records came on the socket job-exec made for it; the launcher told
    # job-exec nothing of either job, on its socket or on the shells'
    assert launcher.told == []
    [shell] = helper.shells
    out = (wire.OUTPUT, JOB, b"o\0\0\0\0%d\n" % shell.pid)
    assert out in first
    assert (wire.OUTPUT, SECOND, out[2]) in second
    assert second[-1][2] == b"0"
    assert launcher.close() == 0  # the spare is retired with the launcher
    assert journal.live(str(launcher.journal)) == {}


def test_a_helpers_refusal_is_the_jobs_end_with_its_reason(tmp_path: Path) -> None:
    refusing = Helper(tmp_path / "imp", refuse=b"J does not verify")
    try:
        launcher = Launcher(tmp_path, tmp_path / "imp")
        launcher.guest_job(["true"])
        got = launcher.until(wire.EXITED)
        assert got == [(wire.EXITED, JOB, b"-1 privileged helper: J does not verify")]
        assert launcher.told == got  # the launcher's word, before the job's socket ended
        [guest] = launcher.guests.values()
        assert select.select([guest.sock], [], [], 30)[0]  # nobody else holds the shell's end
        assert guest.sock.recv(100) == b""
        assert launcher.close() == 0
    finally:
        refusing.close()


def test_an_unreachable_or_unconfigured_helper_is_the_jobs_end(tmp_path: Path) -> None:
    launcher = Launcher(tmp_path, tmp_path / "nobody")
    launcher.guest_job(["true"])
    [(_, _, note)] = launcher.until(wire.EXITED)
    assert note.startswith(b"-1 privileged helper %s: " % str(tmp_path / "nobody").encode())
    assert launcher.close() == 0
    bare = Launcher(tmp_path, None)
    bare.guest_job(["true"])
    [(_, _, note)] = bare.until(wire.EXITED)
    assert note == b"-1 no privileged helper is configured ([exec] imp)"
    assert bare.close() == 0


def test_a_guests_job_whose_launcher_dies_before_it_reads_the_helpers_answer_runs_on(
    tmp_path: Path, helper: Helper
) -> None:
    """The shell's end went to the helper with the request, and job-exec's end is the
    job's: a launcher that dies once the helper has started the shell loses nothing."""
    launcher = Launcher(tmp_path, tmp_path / "imp")
    helper.go.clear()
    launcher.guest_job(["sh", "-c", "echo out"])
    assert helper.took.wait(30)
    os.kill(launcher.proc.pid, signal.SIGSTOP)  # it reads no answer
    helper.go.set()
    assert helper.answered.wait(30)
    launcher.proc.kill()
    launcher.proc.wait(30)
    launcher.killed = True
    got = launcher.until(wire.EXITED)
    assert (wire.OUTPUT, JOB, b"o\0\0\0\0out\n") in got
    assert got[-1] == (wire.EXITED, JOB, b"0")
    for guest in launcher.guests.values():
        guest.close()
    launcher.records.close()


def test_a_guests_job_whose_launcher_dies_before_the_helper_answers_ends(
    tmp_path: Path, helper: Helper
) -> None:
    """The helper runs no shell whose launcher cannot hear of it (nor journal it): the
    job's socket ends, and the job with it."""
    launcher = Launcher(tmp_path, tmp_path / "imp")
    helper.go.clear()
    launcher.guest_job(["sh", "-c", "echo out"])
    assert helper.took.wait(30)
    launcher.proc.kill()
    launcher.proc.wait(30)
    launcher.killed = True
    helper.go.set()
    assert launcher.until(wire.EXITED) == [(wire.EXITED, JOB, UNHEARD)]
    launcher.records.close()


def test_a_guests_job_whose_launcher_dies_holding_its_shells_end_ends(tmp_path: Path) -> None:
    """A launcher that dies before it hands the shell's end on takes it with it: the job's
    socket ends, and the job with it, as a shell's that ended without its status."""
    launcher = Launcher(tmp_path, tmp_path / "imp")
    os.kill(launcher.proc.pid, signal.SIGSTOP)  # it reads nothing more
    launcher.guest_job(["true"])
    launcher.proc.kill()
    launcher.proc.wait(30)
    launcher.killed = True
    assert launcher.until(wire.EXITED) == [(wire.EXITED, JOB, UNHEARD)]
    launcher.records.close()
