"""Starting one job's tasks: the shell's first steps, before anything runs.

A shell journals its session (``pflux.protocol.shelljournal``) before
anything else, makes ``FLUX_JOB_TMPDIR`` (``pflux.safefs.shared``: it may lie
where other users could have been first), writes the jobspec's files there,
goes to the job's cwd, opens its output files, and spawns each task bound to
its cores, with its stdin, stdout and stderr on pipes (or a pty, or a file)
and its PMI-1 socket. ``JobStart`` is this half of a shell
(``pflux.shell.job.Shell`` the rest): the shell's state it reads is declared
here for the type checker, the shell holds it.
"""

from __future__ import annotations

import _socket
import errno
import os
import select
import time

from pflux.errors import PfluxError
from pflux.protocol import shelljournal as journal
from pflux.protocol import shellwire as wire
from pflux.safefs.shared import open_output, private_dir
from pflux.shell import tasks as proc
from pflux.shell.acklog import write_all
from pflux.shell.context import warn
from pflux.shell.lines import LineBuffer

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (mypy knows it)
if TYPE_CHECKING:  # the launcher imports this before it forks: keep typing out of it
    from typing import Any, Final

    from pflux.protocol.shellwire import Description
    from pflux.shell.context import Context
    from pflux.shell.stdin import StdinFeeder

__all__ = ["LOG_FATAL", "STREAMS", "JobStart", "StartFailed", "TaskPipe"]

LOG_FATAL: Final = 0  # flux-core's shell log level of a fatal error
LOG_ERROR: Final = 3  # flux-core's shell log level of an error (syslog's)
STREAMS: Final = (wire.STDOUT, wire.STDERR)
_IN: Final = select.POLLIN


class StartFailed(PfluxError):
    """The tasks cannot be launched: the exception note, and the shell's exit code."""

    def __init__(self, note: str, code: int) -> None:
        super().__init__(note)
        self.note = note
        self.code = code


class TaskPipe:
    """A task's stdout or stderr as the shell reads it: relayed, or labelled into a file."""

    __slots__ = ("buffer", "file", "prefix", "tag")

    def __init__(self, tag: bytes, file: int, rank: int, line: bool) -> None:
        self.tag = tag  # the stream byte and the rank, as OUTPUT and EOF records carry them
        self.file = file  # a labelled file, or -1 to relay
        self.buffer = LineBuffer(line or file >= 0)
        self.prefix = b"%d: " % rank


class JobStart:
    """What a shell does to start its job's tasks."""

    # the shell's state that starting sets, as well as the shell
    __slots__ = (
        "argv0",
        "exit_on_error",
        "exit_timeout",
        "host",
        "own_groups",
        "pmi_job",
        "ptys",
        "stdin_file",
        "tmpdir",
    )

    if TYPE_CHECKING:  # the rest of the shell's (``Shell``) that starting uses
        jobid: int
        ctx: Context
        poller: select.poll
        pipes: dict[int, TaskPipe]
        masters: list[int]
        feeder: StdinFeeder
        pidfds: dict[int, int]
        ranks: dict[int, int]
        targets: list[tuple[tuple[int, ...], bool, bool]]
        files: dict[str, int]
        pmi_fds: dict[int, int]
        argv0: str
        exit_on_error: bool
        exit_timeout: float | None
        host: str
        own_groups: bool
        pmi_job: tuple[Any, ...] | None
        ptys: tuple[int, ...]
        stdin_file: str | None
        tmpdir: str | None

        def _emit(self, kind: bytes, payload: bytes = b"") -> None: ...

    def _record(self) -> None:
        """Journal the session before any task exists, so a crash cannot lose track of it
        (a guest's shell has no journal: its launcher journals it)."""
        if self.ctx.journal < 0:
            return
        when = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
        line = journal.start_line(self.jobid, os.getpid(), when, self.ctx.boot)
        try:
            os.write(self.ctx.journal, line)
        except OSError as exc:
            raise StartFailed(f"cannot record the job shell: {exc.strerror}", 1) from None

    def _environment(self, job: Description) -> None:
        """What the tasks' environment gets here: their directory, and on a broker rank
        of its own (another node), that broker's URI."""
        env = job.env
        env["FLUX_JOB_TMPDIR"] = self._make_tmpdir(job.tmpdirs)
        if self.ctx.uri is not None:
            env["PFLUX_URI"] = env["FLUX_URI"] = self.ctx.uri

    def _chdir(self, cwd: str, host: str) -> None:
        """Go to the job's directory; as flux-core's shell, a missing one is said on the
        shell's log and the tasks run in /tmp."""
        try:
            os.chdir(cwd)
        except OSError as exc:
            said = f"host {host}: Could not change dir to {cwd}: {exc.strerror}."
            said += " Going to /tmp instead"
            self._emit(wire.LOG, b"%d %s" % (LOG_ERROR, said.encode()))
            try:
                os.chdir("/tmp")
            except OSError as again:
                raise StartFailed(f"Could not change dir to /tmp: {again.strerror}", 1) from None

    def _start(self, job: Description) -> None:
        """Make the job's directory, go to its cwd, open its files and start its tasks."""
        env = job.env
        argv = job.argv
        pmi = job.pmi
        self.ptys = job.ptys
        self.host = host = job.host
        self.pmi_job = None if pmi is None else (*pmi, env["FLUX_JOB_ID"], len(job.tasks))
        self._environment(job)
        if job.files or job.tmpdir_argv:
            argv = _stage(job)
        task_envs = self._options(job)
        if job.cwd is not None:
            self._chdir(job.cwd, host)
        self._open_outputs([job.stdout, job.stderr])
        if job.stdin is not None:  # one error before any task starts, as flux-core gives
            self.stdin_file = job.stdin
            os.close(self._stdin(-1)[0])
        path = env.get("PATH")
        if path is not None and path != self.ctx.path:
            os.putenv("PATH", path)  # posix_spawnp searches the caller's PATH
        saved = _set_limits(job.rlimit) if job.rlimit else ()
        bound = None  # the shell stays where its last task is: its work is the job's
        tasks = job.tasks
        last = len(tasks) - 1
        try:
            for index, (rank, local_id, cpus, gpus) in enumerate(tasks):
                if cpus != bound:
                    self._bind(cpus or self.ctx.cpus)
                    bound = cpus
                task_env = env if index == last else dict(env)
                task_env["FLUX_TASK_RANK"] = str(rank)
                task_env["FLUX_TASK_LOCAL_ID"] = str(local_id)
                if gpus is not None:
                    task_env["CUDA_VISIBLE_DEVICES"] = gpus
                if task_envs:
                    task_env.update(task_envs[index])
                theirs = -1 if pmi is None else self._pmi_connect(rank, pmi[0], task_env)
                try:
                    self._spawn(index, rank, argv, task_env)
                finally:
                    if theirs >= 0:
                        os.close(theirs)
        finally:
            if saved:
                _set_limits(saved)  # the limits are the job's tasks', not the shell's

    def _options(self, job: Description) -> list[dict[str, str]] | None:
        """Take the job's exit options; fill in ``{{tmpdir}}``; the tasks' own variables."""
        task_envs = job.task_env
        tmpdir = job.env["FLUX_JOB_TMPDIR"]
        for key in job.tmpdir_env:
            for values in (job.env, *(task_envs or ())):
                if key in values:
                    values[key] = values[key].replace("{{tmpdir}}", tmpdir)
        self.argv0 = job.argv[0].rpartition("/")[2]
        self.exit_timeout = job.exit_timeout
        self.exit_on_error = job.exit_on_error
        self.own_groups = not job.nosetpgrp
        return task_envs

    def _pmi_connect(self, rank: int, size: int, env: dict[str, str]) -> int:
        """Task ``rank``'s PMI_FD, as flux-core's shell sets it: the task's end, inheritable."""
        ours, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
        fd = theirs.detach()
        os.set_inheritable(fd, True)
        self.pmi_fds[ours.fileno()] = rank
        self.poller.register(ours.detach(), _IN)
        env["PMI_FD"] = str(fd)
        env["PMI_RANK"] = str(rank)
        env["PMI_SIZE"] = str(size)
        return fd

    def _make_tmpdir(self, candidates: tuple[str, ...]) -> str:
        """FLUX_JOB_TMPDIR, named as flux-core names it; removed when the shell ends.
        A candidate may lie in a shared place (/tmp): ``pflux.safefs.shared.private_dir``."""
        refused = []
        for path in candidates:
            why = private_dir(path)
            if not why:
                self.tmpdir = path
                return path
            refused.append(why)
        raise StartFailed(f"error creating FLUX_JOB_TMPDIR ({'; '.join(refused)})", 1)

    def _open_outputs(self, outputs: list[Any]) -> None:
        """Open the files output goes to; tasks and streams that name one path share it."""
        opened = self.files
        for target in outputs:
            if not isinstance(target, tuple):  # kept in the KVS: is it line-buffered?
                self.targets.append(((), False, bool(target)))
                continue
            paths, append, labelled = target
            fds = []
            for path in paths:
                fd = opened.get(path)
                if fd is None:
                    try:
                        fd = opened[path] = open_output(path, append=append)
                    except OSError as exc:
                        raise StartFailed(
                            f"error opening output file {path}: {exc.strerror}", 1
                        ) from None
                fds.append(fd)
            self.targets.append((tuple(fds), labelled, True))

    def _bind(self, cpus: tuple[int, ...]) -> None:
        """Bind the shell (and so the next task it starts) to ``cpus``."""
        try:
            os.sched_setaffinity(0, cpus)
        except OSError as exc:
            warn(f"job {wire.key_name(self.jobid)}: cannot bind to CPUs {list(cpus)}: {exc}")

    def _stdin(self, rank: int) -> tuple[int, int]:
        """(the task's stdin, the shell's end of its pipe or -1)."""
        if self.stdin_file is not None:  # opened for each task, as flux-core does
            try:
                return os.open(self.stdin_file, os.O_RDONLY | os.O_CLOEXEC), -1
            except OSError as exc:
                raise StartFailed(
                    f"error opening input file '{self.stdin_file}': {exc.strerror}", 1
                ) from None
        return os.pipe()  # the shell's end is made non-blocking when input first comes

    def _spawn(self, index: int, rank: int, argv: list[str], env: dict[str, str]) -> None:
        if rank in self.ptys:
            self._spawn_on_pty(index, rank, argv, env)
            return
        ends = []  # the task's stdout and stderr
        readers = []  # (the shell's end, its stream, the labelled file or -1, line-buffered)
        for stream, (files, labelled, line) in enumerate(self.targets):
            file = (files[index] if len(files) > 1 else files[0]) if files else -1
            if file >= 0 and not labelled:
                ends.append(file)
                continue
            reader, writer = os.pipe()
            ends.append(writer)
            readers.append((reader, stream, file, line))
        stdin, feeder = self._stdin(rank)
        try:
            pid = proc.spawn(
                argv, env, stdin=stdin, stdout=ends[0], stderr=ends[1], own_group=self.own_groups
            )
        except OSError as exc:
            for reader, _, _, _ in readers:
                os.close(reader)
            if feeder >= 0:
                os.close(feeder)
            raise self._start_failed(rank, argv, exc) from None
        finally:
            os.close(stdin)
            for _, stream, _, _ in readers:
                os.close(ends[stream])
        self._started(pid, rank)
        if feeder >= 0:
            self.feeder.add(rank, feeder)
        for reader, stream, file, line in readers:
            tag = STREAMS[stream] + rank.to_bytes(4, "big")
            self.pipes[reader] = TaskPipe(tag, file, rank, line)
            self.poller.register(reader, _IN)

    def _spawn_on_pty(self, index: int, rank: int, argv: list[str], env: dict[str, str]) -> None:
        """A task on a new pty (``pflux.exec.terminal``): its output is the rank's stdout."""
        files, labelled, _ = self.targets[0]
        file = (files[index] if len(files) > 1 else files[0]) if files else -1
        stdin = -1
        if self.stdin_file is not None:  # the --input file, rather than the terminal
            stdin = self._stdin(rank)[0]
        master, slave = os.openpty()
        try:
            pid = proc.spawn_on_tty(argv, env, os.ttyname(slave), stdin=stdin)
        except OSError as exc:
            os.close(master)
            raise self._start_failed(rank, argv, exc) from None
        finally:
            os.close(slave)
            if stdin >= 0:
                os.close(stdin)
        self._started(pid, rank)
        if stdin < 0:
            self.feeder.add(rank, os.dup(master), tty=True)
        self.masters.append(master)
        # what a terminal shows is sent as it comes (a prompt ends no line)
        tag = STREAMS[0] + rank.to_bytes(4, "big")
        pipe = self.pipes[master] = TaskPipe(tag, file, rank, False)
        if not labelled:
            pipe.prefix = b""
        self.poller.register(master, _IN)

    def _started(self, pid: int, rank: int) -> None:
        pidfd = os.pidfd_open(pid)
        self.pidfds[pidfd] = pid
        self.ranks[pid] = rank
        self.poller.register(pidfd, _IN)

    def _start_failed(self, rank: int, argv: list[str], exc: OSError) -> StartFailed:
        return StartFailed(
            f"task {rank} (host {self.host}): start failed: {argv[0]}: {exc.strerror}",
            proc.start_failure_code(exc.errno or errno.EINVAL),
        )


def _set_limits(limits: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Set each (resource, soft limit); the soft limits they had, to put back."""
    import resource

    saved = []
    for number, soft in limits:
        old, hard = resource.getrlimit(number)
        try:
            resource.setrlimit(number, (soft, hard))
        except (OSError, ValueError) as exc:
            warn(f"cannot set resource limit {number} to {soft}: {exc}")
            continue
        saved.append((number, old))
    return saved


def _stage(job: Description) -> list[str]:
    """Write the jobspec's files, directories and links (``pflux.spec.files``) in the
    job's directory, with their permission bits, before any task starts (a fatal
    exception names one that fails); the command with ``{{tmpdir}}`` filled in."""
    tmpdir = job.env["FLUX_JOB_TMPDIR"]
    for name, content, mode in job.files:
        path = f"{tmpdir}/{name}"
        kind = mode & 0o170000
        try:
            if "/" in name:
                os.makedirs(path.rpartition("/")[0], 0o700, exist_ok=True)
            if kind == 0o040000:  # a directory
                os.makedirs(path, 0o700, exist_ok=True)
                os.chmod(path, mode & 0o7777)
                continue
            if kind == 0o120000:  # a symbolic link to its data
                os.symlink(content, path)
                continue
            new = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(path, new, 0o600)
            try:
                write_all(fd, content)
                os.fchmod(fd, mode & 0o7777)
            finally:
                os.close(fd)
        except OSError as exc:
            raise StartFailed(
                f"error writing {name} to FLUX_JOB_TMPDIR: {exc.strerror}", 1
            ) from None
    if not job.tmpdir_argv:
        return job.argv
    return [arg.replace("{{tmpdir}}", tmpdir) for arg in job.argv]
