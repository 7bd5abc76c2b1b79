"""Starting, signalling and reaping task processes.

Tasks start with ``posix_spawn`` (vfork and exec, no Python in the child),
which is what makes a warm shell cheap: the CPU binding is set on the shell
itself just before each spawn, since a child inherits its parent's affinity,
and the PATH search uses the shell's own PATH, which the shell sets to the
job's. Each task leads its own process group, so a signal reaches the
processes it started too, as in flux-core's shell (unless the job sets
``-o nosetpgrp``: the task is then signalled alone). A shell that gives way
(``give_way``) starts its tasks under the scheduling policy it had itself.
"""

from __future__ import annotations

import errno
import os

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (mypy knows it)
if TYPE_CHECKING:  # forked shells import this: keep typing out of the launcher
    import signal as _signal
    from collections.abc import Mapping
    from typing import Any, Final, TypedDict

    class _Scheduler(TypedDict, total=False):
        scheduler: tuple[int, os.sched_param]

else:
    import _signal  # not signal, which imports enum: the launcher keeps its imports few

__all__ = [
    "children",
    "exit_code",
    "give_way",
    "set_subreaper",
    "signal_task",
    "spawn",
    "spawn_on_tty",
    "start_failure_code",
    "trim_heap",
]

_PR_SET_CHILD_SUBREAPER: Final = 36
_libc: list[Any] = []
_NORMAL: Final = os.sched_param(0)
# ``posix_spawn``'s ``scheduler`` where the shell's policy is not its tasks' (not None:
# Python 3.11 refuses an explicit None)
_tasks_policy: _Scheduler = {}

# every signal a task may catch starts at its default action: one its shell's parents
# ignored (Python ignores SIGPIPE and SIGXFSZ; an instance started under nohup, SIGHUP)
# would stay ignored in the task, and a shell script cannot trap a signal ignored on entry
_DEFAULT_SIGNALS: Final = tuple(
    sorted(_signal.valid_signals() - {_signal.SIGKILL, _signal.SIGSTOP})
)


def spawn(
    argv: list[str],
    env: Mapping[str, str],
    *,
    stdin: int,
    stdout: int,
    stderr: int,
    own_group: bool = True,
) -> int:
    """Start ``argv`` with its stdio on the given fds, leading a process group of its own
    if ``own_group``; its pid, or OSError as exec gives it."""
    actions = [
        (os.POSIX_SPAWN_DUP2, stdin, 0),
        (os.POSIX_SPAWN_DUP2, stdout, 1),
        (os.POSIX_SPAWN_DUP2, stderr, 2),
    ]
    if own_group:
        return os.posix_spawnp(
            argv[0],
            argv,
            env,
            file_actions=actions,
            setpgroup=0,
            setsigdef=_DEFAULT_SIGNALS,
            setsigmask=(),
            **_tasks_policy,
        )
    return os.posix_spawnp(
        argv[0],
        argv,
        env,
        file_actions=actions,
        setsigdef=_DEFAULT_SIGNALS,
        setsigmask=(),
        **_tasks_policy,
    )


def signal_task(pid: int, signum: int) -> None:
    """Send ``signum`` to a task's process group (the task itself if it left it)."""
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        _kill(pid, signum)


def _kill(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        return


def exit_code(status: int) -> int:
    """The shell's view of a wait status: the exit code, or 128 + signal."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def start_failure_code(errnum: int) -> int:
    """The exit code for a task that could not start: 126 not executable, 127 not found.

    The shell conventions flux-core's shell follows.
    """
    if errnum in (errno.EPERM, errno.EACCES):
        return 126
    if errnum == errno.ENOENT:
        return 127
    return 1


def _c_library() -> Any:
    if not _libc:
        import ctypes

        _libc.append(ctypes.CDLL(None, use_errno=True))
    return _libc[0]


def trim_heap() -> None:
    """Give the C heap's free memory back to the system (glibc ``malloc_trim``).

    A process that forks shells pays, at every fork and every exit, for each
    page it has: importing leaves freed memory behind, worth trimming once.
    """
    _c_library().malloc_trim(0)


def give_way() -> None:
    """Run this shell under ``SCHED_BATCH``, and its tasks under the ``SCHED_OTHER`` it
    leaves.

    A shell's work is a fraction of a millisecond a job, between the broker and
    the tasks; under ``SCHED_BATCH`` a shell that wakes (a task has ended, its
    records are acknowledged) does not take the CPU from the broker, which every
    job waits on, nor from a task. A shell of an instance started under another
    policy (``chrt``) keeps it, and so do its tasks.
    """
    try:
        if os.sched_getscheduler(0) != os.SCHED_OTHER:
            return
        os.sched_setscheduler(0, os.SCHED_BATCH, _NORMAL)
    except OSError:
        return
    _tasks_policy["scheduler"] = (os.SCHED_OTHER, _NORMAL)


def set_subreaper() -> bool:
    """Adopt orphaned descendants (``PR_SET_CHILD_SUBREAPER``, not inherited by a fork).

    A job's processes then stay findable however they detach, and can be
    killed when the job ends. False if the kernel refused.
    """
    return bool(_c_library().prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)


def children() -> list[int]:
    """The pids of the calling process's children (Linux ``/proc/PID/task/PID/children``)."""
    pid = os.getpid()
    try:
        fd = os.open(f"/proc/{pid}/task/{pid}/children", os.O_RDONLY)
    except OSError:
        return []
    try:
        data = b""
        while chunk := os.read(fd, 65536):
            data += chunk
    finally:
        os.close(fd)
    return [int(p) for p in data.split()]


def spawn_on_tty(argv: list[str], env: Mapping[str, str], tty: str, *, stdin: int) -> int:
    """Start ``argv`` leading a session whose controlling terminal is ``tty`` (a pty's path).

    Its stdout and stderr are the terminal, and its stdin too unless ``stdin``
    is an fd (-1: none). Opened after ``setsid``, the terminal becomes the
    session's controlling terminal; the session is the task's process group.
    """
    actions: list[tuple[Any, ...]] = [
        (os.POSIX_SPAWN_OPEN, 1, tty, os.O_RDWR, 0),
        (os.POSIX_SPAWN_DUP2, 1, 2),
        (os.POSIX_SPAWN_DUP2, 1 if stdin < 0 else stdin, 0),
    ]
    return os.posix_spawnp(
        argv[0],
        argv,
        env,
        file_actions=actions,
        setsid=True,
        setsigdef=_DEFAULT_SIGNALS,
        setsigmask=(),
        **_tasks_policy,
    )
