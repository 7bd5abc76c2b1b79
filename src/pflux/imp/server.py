"""The helper's loop: take a launcher's request, check it, become the user, run the shell.

One request per connection to the helper's socket (``pflux.protocol.impwire``):
the asker must be an allowed user (``SO_PEERCRED``); J must verify under the
configured mechanisms and name the job's user, neither root nor unknown; the
description must be J's jobspec's (``pflux.imp.check``). Each request is served
by a worker forked ahead of need, as the launcher forks its shells: forking
costs milliseconds, verifying J a round trip to munged, and neither then delays
the next request, which another worker takes. The worker answers with its own
pid, takes the user's groups, gid and uid (checking that each took and that
root cannot be had back) and becomes the job shell (``pflux.shell.job.Shell``)
on the sockets the launcher passed, with neither journal nor spool: nothing it
holds is shared with another job. The parent only keeps ``SPARES`` workers
waiting, and reaps them; a connection from a user not allowed is refused by the
worker that took it, which goes on waiting (another user's connections cost no fork).

The helper never executes anything a request names and never reads the
user's environment: the tasks get the description's, which was checked.
"""

from __future__ import annotations

import _socket
import gc
import json
import os
import pwd
import re
import resource
import signal
import socket
import sys
from collections.abc import Callable, Mapping
from typing import Any, Final

import msgspec

from pflux.errors import PfluxError
from pflux.fluxshim import ShimEnv, shim_env
from pflux.imp.check import Allowed, mismatch
from pflux.imp.config import ImpConfig
from pflux.protocol import impwire
from pflux.protocol import shelljournal as journal
from pflux.protocol import shellwire as wire
from pflux.protocol.peer import peer_credentials
from pflux.protocol.shellwire import Description
from pflux.shell import tasks as proc
from pflux.shell.context import Context
from pflux.shell.job import Shell
from pflux.shell.serve import JOBS_PER_SHELL

__all__ = ["ImpServer", "Known", "Refused", "become", "next_guest_job"]

REQUEST_TIMEOUT: Final = 10.0  # seconds a connection may take to send its request
CLEAN_PATH: Final = "/usr/sbin:/usr/bin:/sbin:/bin"  # the helper's own, and its shells'
_TWO_FDS: Final = socket.CMSG_SPACE(2 * wire.FD_SIZE)  # a request's room for its sockets
SPARES: Final = 4  # workers waiting for a request
_PID_SIZE: Final = 4
_MAX_FD: Final = 1 << 30  # past any descriptor (closerange stops at the table's end)
_QUEUED: Final = 64  # datagrams of a refused asker's discarded, at most
_PR_SET_DUMPABLE: Final = 4
_PR_SET_PDEATHSIG: Final = 1
_TMPDIR_NAME: Final = re.compile(r"jobtmp-[0-9]+-[^/\x00]+")
_TMPDIRS: Final = Description._fields.index("tmpdirs")
_RLIMIT: Final = Description._fields.index("rlimit")


class Refused(PfluxError):
    """A request the helper does not run: the reason, sent back to the asker."""


class ImpServer:
    """Keep ``SPARES`` workers waiting on the socket, each for one request (see the module
    docstring); a worker that takes one says so, and another is forked in its place."""

    def __init__(self, config: ImpConfig, listener: socket.socket) -> None:
        self.config = config
        self.listener = listener
        self.shim = shim_env()._replace(python=config.python)
        self.boot = journal.boot_id().encode()
        self.idle: set[int] = set()  # workers waiting for a request
        self.parent = os.getpid()
        self.taken, self.taking = os.pipe()  # a worker's pid, once it has a request
        self.known: Known | None = None  # the jobspec of the last job checked
        self.tmpdirs = os.path.join(config.job_tmpdir, "")  # a job's is this and its name

    def run(self) -> None:
        signal.signal(signal.SIGCHLD, self._reap)
        self._warm()
        # what the workers share with this process stays shared: nothing collects it
        gc.freeze()
        proc.trim_heap()
        while True:
            while len(self.idle) < SPARES:
                self._fork()
            try:
                pid = int.from_bytes(os.read(self.taken, _PID_SIZE), "big")
            except InterruptedError:
                continue
            self.idle.discard(pid)

    def _warm(self) -> None:
        """Check a request of root's own once, before any fork: what a worker would do
        first otherwise (load libmunge, import and compile what checking uses) costs
        tens of milliseconds, once per worker."""
        from _pfluxcore.sign import SignError, unwrap, wrap

        jobspec = {"tasks": [{"command": ["true"]}], "attributes": {"system": {}}}
        config = self.config
        for mechanism in config.allowed_mechanisms:
            try:
                signed = wrap(json.dumps(jobspec), mechanism=mechanism, userid=0)
                unwrap(signed, allowed=config.allowed_mechanisms, max_ttl=config.max_ttl)
            except SignError as exc:
                _log(f"{mechanism}: {exc}")
        sample = Description(
            argv=["true"], env={}, tasks=[(0, 0, None, None)], cwd=None, tmpdirs=(),
            host="", stdin=None, stdout=False, stderr=False, pmi=None, rlimit=[],
            exit_timeout=None, exit_on_error=False, task_env=None, tmpdir_env=[], ptys=(),
            nosetpgrp=False, files=[], tmpdir_argv=False,
        )  # fmt: skip
        plain = impwire.encode_description(sample)
        mismatch(impwire.decode_description(plain), jobspec, self.shim)

    def _fork(self) -> None:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = self._worker()
            finally:
                os._exit(code)
        self.idle.add(pid)

    def _reap(self, signum: int, frame: object) -> None:
        """SIGCHLD: reap every worker or shell that has ended."""
        try:
            while pid := os.waitpid(-1, os.WNOHANG)[0]:
                self.idle.discard(pid)
        except ChildProcessError:
            return

    def _worker(self) -> int:
        """Wait for a request, say it is taken, serve it; the exit code."""
        # as the launcher's shells: reference counting frees what a job made, and a
        # collection would write to the pages shared with the helper, in every job
        gc.disable()
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.close(self.taken)
        # a worker waiting for a request ends with the helper (a shell's job goes on)
        proc._c_library().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != self.parent:
            return 0  # it ended already
        while (conn := self._accept()) is None:
            pass
        proc._c_library().prctl(_PR_SET_PDEATHSIG, 0, 0, 0, 0)
        os.write(self.taking, os.getpid().to_bytes(_PID_SIZE, "big"))
        os.close(self.taking)
        self.listener.close()
        return self.serve(conn)

    def _accept(self) -> socket.socket | None:
        """A connection from an allowed user; None once another was refused (the worker
        stays a worker: another user's connections cost the helper no fork)."""
        try:
            conn, _ = self.listener.accept()
        except (InterruptedError, ConnectionAbortedError):
            return None
        _, uid, _ = peer_credentials(conn)
        if uid in self.config.allowed_users:
            return conn
        _drop_queued(conn)  # read nothing more: it may not keep a worker waiting
        why = f"uid {uid} is not one of the helper's allowed-users"
        _log(f"refused: {why}")
        _answer(conn, wire.EXCEPTION, 0, why.encode())
        conn.close()
        return None

    def serve(self, conn: socket.socket) -> int:
        """One request: answered with this process's pid and run as its job's shell, or
        refused with the reason; the exit code."""
        fds: list[int] = []
        key = 0
        try:
            conn.settimeout(REQUEST_TIMEOUT)
            key, payload, fds = _receive(conn)
            job = self._check(key, payload, fds)
        except (Refused, OSError) as exc:
            for fd in fds:
                os.close(fd)
            if isinstance(exc, Refused):
                _log(f"refused job {wire.key_name(key)}: {exc}")
                _answer(conn, wire.EXCEPTION, key, str(exc).encode())
            else:
                _log(f"request: {exc}")
            return 1
        if not _answer(conn, wire.STARTED, key, b"%d" % os.getpid()):
            for fd in fds:  # the asker is gone, and with it who would journal the shell
                os.close(fd)
            return 1
        conn.close()
        return _shell(*job, checked=self._checked)

    def _check(self, key: int, payload: bytes, fds: list[int]) -> tuple[Any, ...]:
        """The arguments of ``_shell`` for the request, if it is to be run."""
        if len(fds) != 2 or not all(_is_seqpacket(fd) for fd in fds):
            raise Refused("the request must carry the shell's two sockets")
        uid, description, uri = self._checked(payload)
        try:
            entry = pwd.getpwuid(uid)
        except KeyError:
            raise Refused(f"uid {uid} does not exist") from None
        return entry, key, description, fds, (uri or None, self.boot)

    def _checked(self, payload: bytes) -> tuple[int, Description, str]:
        """(the job's uid, the description as it is run, the URI line) of a request whose J
        verifies and whose description is J's jobspec's; Refused otherwise. A guest's
        shell asks it again, as its user, of each further job the launcher gives it (the
        helper then looks the uid up; the shell compares it with its own)."""
        try:
            uri, userid_text, signed, data = impwire.split_request(payload)
            description = impwire.decode_description(data)
        except impwire.DescriptionError as exc:
            raise Refused(str(exc)) from None
        jobspec, uid = self._user(userid_text, signed)
        known = self.known
        if known is None or known.payload != jobspec:  # a shell's jobs mostly share one
            known = self.known = Known(jobspec, self.shim)
        why = known.allowed.mismatch(description)
        if why:
            raise Refused(f"the job's shell is not what its user signed: {why}")
        return uid, self._settled(description, known), uri

    def _user(self, userid_text: str, signed: str) -> tuple[bytes, int]:
        """(J's payload, its user), once J verifies and names the job's user."""
        from _pfluxcore.sign import SignError, unwrap

        if not userid_text.isdigit():
            raise Refused("the job's userid must be a number")
        userid = int(userid_text)
        config = self.config
        try:
            verified = unwrap(signed, allowed=config.allowed_mechanisms, max_ttl=config.max_ttl)
        except SignError as exc:
            raise Refused(f"J does not verify: {exc}") from None
        if verified.userid != userid:
            raise Refused(f"J is signed by uid {verified.userid}, not the job's uid {userid}")
        if userid == 0:
            raise Refused("the helper runs no job as root")
        return verified.payload, userid

    def _settled(self, description: Description, known: Known) -> Description:
        """The description as the helper runs it: ``FLUX_JOB_TMPDIR`` in the configured
        directory (the instance's is not the user's to write in), and every limit the
        jobspec asks for (the helper's own are not the submitter's)."""
        names = {path.rpartition("/")[2] for path in description.tmpdirs}  # basenames
        if len(names) != 1 or not _TMPDIR_NAME.fullmatch(next(iter(names))):
            raise Refused(f"tmpdirs: {description.tmpdirs!r}: not one jobtmp-RANK-ID name")
        if known.limits is None:
            system = known.jobspec["attributes"]["system"]
            options = system.get("shell", {}).get("options", {})
            known.limits = _limits(options.get("rlimit", {}))
        settled: list[Any] = list(description)
        settled[_TMPDIRS] = (self.tmpdirs + names.pop(),)
        settled[_RLIMIT] = list(known.limits)
        return Description(*settled)


class Known:
    """A jobspec J carried, decoded, with what a job's check against it needs, worked out
    once (``pflux.imp.check.Allowed``, the limits it asks for). A guest's shell keeps the
    last one: the jobs a user submits together carry the same jobspec, each in its own
    J, which the shell verifies for each job before the jobspec is compared."""

    __slots__ = ("allowed", "jobspec", "limits", "payload")

    def __init__(self, payload: bytes, shim: ShimEnv | None) -> None:
        try:
            self.jobspec = msgspec.json.decode(payload)
        except msgspec.DecodeError:
            raise Refused("J's payload is not a JSON jobspec") from None
        self.payload = payload
        self.allowed = Allowed(self.jobspec, shim)
        self.limits: list[tuple[int, int]] | None = None  # once a job of it is settled


def _limits(wanted: Any) -> list[tuple[int, int]]:
    """(resource, soft limit) for each limit the jobspec names, cut to the hard limit."""
    if not isinstance(wanted, Mapping):
        raise Refused("rlimit: must be a mapping of limit names to numbers")
    limits = []
    for name, value in wanted.items():
        symbol = "RLIMIT_NOFILE" if name == "ofile" else f"RLIMIT_{str(name).upper()}"
        number = getattr(resource, symbol, None)
        if not isinstance(number, int) or not isinstance(value, int) or value < -1:
            raise Refused(f"rlimit: {name}={value!r}: not a limit")
        soft = resource.RLIM_INFINITY if value == -1 else value
        hard = resource.getrlimit(number)[1]
        if hard != resource.RLIM_INFINITY and (soft == resource.RLIM_INFINITY or soft > hard):
            soft = hard
        limits.append((number, soft))
    return limits


def become(entry: pwd.struct_passwd) -> None:
    """Take the user's groups, gid and uid for good; OSError if any did not take."""
    uid, gid = entry.pw_uid, entry.pw_gid
    os.initgroups(entry.pw_name, gid)
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):
        raise OSError(f"cannot become uid {uid}, gid {gid}")
    if set(os.getgroups()) != set(os.getgrouplist(entry.pw_name, gid)):
        raise OSError(f"cannot take the groups of {entry.pw_name}")
    try:
        os.setuid(0)
    except PermissionError:
        return
    raise OSError("root could be had back after becoming the user")


def _shell(
    entry: pwd.struct_passwd,
    key: int,
    description: Description,
    fds: list[int],
    where: tuple[str | None, bytes],
    *,
    checked: Callable[[bytes], tuple[int, Description, str]],
) -> int:
    """Become the user, then be the job's shell, and the shell of the user's further jobs
    the launcher gives it, each ``checked`` as the first was; the exit code. ``where``:
    the broker URI for the tasks (None: the description's) and the boot id.

    The shell is the user's own process from the first job on, so a further job needs
    no privilege: only J, which the shell verifies itself, and which the user alone can
    make. Reused, as the launcher's own shells are, a guest's job costs no fork."""
    uri, boot = where
    control, records = fds
    keep = sorted((0, 1, 2, control, records))
    low = 0
    for fd in keep:
        if fd > low:
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, _MAX_FD)
    os.set_inheritable(control, False)  # the tasks get neither
    os.set_inheritable(records, False)
    try:
        become(entry)
    except OSError as exc:
        _log(f"job {wire.key_name(key)}: {exc}")
        note = f"pflux-imp: {exc}".encode()
        os.write(records, wire.record(wire.EXCEPTION, key, note))
        return 1
    proc._c_library().prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)  # the process is the user's now
    os.chdir("/")
    os.setsid()
    if not proc.set_subreaper():
        _log("cannot adopt orphaned processes (PR_SET_CHILD_SUBREAPER)")
    proc.give_way()
    ctx = Context(
        journal=-1,
        boot=boot,
        devnull=os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC),
        cpus=tuple(sorted(os.sched_getaffinity(0))),
        cwd="/",
        path=os.environ.get("PATH"),
        records=socket.socket(fileno=records),
        spool="",
        exec_dir=-1,
        uri=uri,
    )
    sock = socket.socket(fileno=control)
    ran = 0
    while True:
        shell = Shell(key, ctx, sock)
        code = shell.run_job(description)
        ran += 1
        if code or ran == JOBS_PER_SHELL or not shell.reset():
            return code
        try:
            sock.send(wire.record(wire.DONE, key))
        except OSError:
            return 0  # the launcher is gone: nobody would give another job
        job = next_guest_job(sock)
        if job is None:
            return 0  # retired
        key, payload, fds = job
        try:
            description = _next_description(payload, fds, records, checked)
        except Refused as exc:
            _log(f"refused job {wire.key_name(key)}: {exc}")
            note = f"pflux-imp: {exc}".encode()
            os.write(records, wire.record(wire.EXCEPTION, key, note))
            return 1


def _next_description(
    payload: bytes,
    fds: list[int],
    records: int,
    checked: Callable[[bytes], tuple[int, Description, str]],
) -> Description:
    """A further job's description, ``checked`` and the shell's user's, with the job's own
    records socket (``fds``) in place of the last job's at ``records``; Refused if not."""
    try:
        if len(fds) != 1 or not _is_seqpacket(fds[0]):
            raise Refused("the job came without its records socket")
        os.dup2(fds[0], records, inheritable=False)  # job-exec reads it as this job's only
    finally:
        for fd in fds:
            os.close(fd)
    uid, description, _ = checked(payload)
    if uid != os.getuid():
        raise Refused(f"the job is uid {uid}'s, not this shell's")
    return description


def next_guest_job(sock: socket.socket) -> tuple[int, bytes, list[int]] | None:
    """(shell key, payload, the descriptors passed: the job's records socket) of the next
    SPAWN_AS the launcher gives a guest's shell; None when its socket ends first."""
    try:
        while True:
            data, ancillary, _, _ = sock.recvmsg(impwire.SPAWN_CHUNK, _TWO_FDS)
            fds = wire.passed_fds(ancillary)
            if not data:
                return None
            if len(data) >= wire.HEADER.size and data[:1] == wire.SPAWN_AS:
                break
            for fd in fds:  # for the job before, passed on before the launcher heard it was done
                os.close(fd)
        _, jobid, rank, length = wire.HEADER.unpack_from(data)
        while len(data) < wire.HEADER.size + length:  # a large request comes in pieces
            more = sock.recv(impwire.SPAWN_CHUNK)
            if not more:
                for fd in fds:
                    os.close(fd)
                return None
            data += more
    except OSError:
        return None
    return wire.shell_key(jobid, rank), data[wire.HEADER.size :], fds


def _receive(conn: socket.socket) -> tuple[int, bytes, list[int]]:
    """(shell key, payload, the descriptors passed) of a SPAWN_AS request."""
    data, ancillary, flags, _ = conn.recvmsg(impwire.SPAWN_CHUNK, _TWO_FDS)
    fds = wire.passed_fds(ancillary)
    try:
        if flags & socket.MSG_CTRUNC:
            raise Refused("the request carried more than the shell's two sockets")
        if len(data) < wire.HEADER.size:
            raise Refused("the request is shorter than a record's header")
        kind, jobid, rank, length = wire.HEADER.unpack_from(data)
        if kind != impwire.SPAWN_AS:
            raise Refused(f"the request is not SPAWN_AS but {kind!r}")
        if length > impwire.MAX_REQUEST:
            raise Refused(f"the request is longer than {impwire.MAX_REQUEST} bytes")
        chunks = [data[wire.HEADER.size :]]
        got = len(chunks[0])
        while got < length:
            more = conn.recv(impwire.SPAWN_CHUNK)
            if not more:
                raise Refused("the request ended early")
            chunks.append(more)
            got += len(more)
        if got != length:
            raise Refused("the request is longer than its header says")
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return wire.shell_key(jobid, rank), b"".join(chunks), fds


def _drop_queued(conn: socket.socket) -> None:
    """Discard what a connection has queued (closing any descriptor it passed), without
    waiting: closed with data unread, the asker's end would lose the answer to a reset."""
    space = socket.CMSG_SPACE(8 * wire.FD_SIZE)
    for _ in range(_QUEUED):
        try:
            data, ancillary, _, _ = conn.recvmsg(impwire.SPAWN_CHUNK, space, socket.MSG_DONTWAIT)
        except OSError:
            return
        for fd in wire.passed_fds(ancillary):
            os.close(fd)
        if not data:
            return


def _is_seqpacket(fd: int) -> bool:
    try:
        sock = _socket.socket(fileno=fd)  # the C type's: no dup, no enums to make
    except OSError:
        return False
    try:
        return bool(sock.family == _socket.AF_UNIX and sock.type == _socket.SOCK_SEQPACKET)
    finally:
        sock.detach()  # the descriptor stays open: it is the caller's


def _answer(conn: socket.socket, kind: bytes, key: int, payload: bytes) -> bool:
    """Send the asker the answer; False (said why) if it cannot take it."""
    try:
        conn.send(wire.record(kind, key, payload))
    except OSError as exc:
        _log(f"cannot answer for job {wire.key_name(key)}: {exc.strerror}")
        return False
    return True


def _log(message: str) -> None:
    sys.stderr.write(f"pflux-imp: {message}\n")
    sys.stderr.flush()
