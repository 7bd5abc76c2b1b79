"""How a job ended (RFC 21): its result, its exit code and the words that say why.

Shared by the job manager (``job wait``), job-list (the result column) and the
CLI (``pflux run``'s exit code), so that all three read an ending the same way.
"""

from __future__ import annotations

from pflux.spec.statebits import INACTIVE

# job results, as flux-core names them
COMPLETED, FAILED, CANCELED, TIMEOUT = "COMPLETED", "FAILED", "CANCELED", "TIMEOUT"


class Outcome:
    """How a job ended, for a job being replayed and for one reduced to its ending."""

    __slots__ = ()
    state: int  # a State (an int); named here without importing its enum
    exception: tuple[str, str] | None
    ended_by_exception: bool  # a fatal exception, not finish, took it to CLEANUP
    finish_status: int | None

    @property
    def result(self) -> str | None:
        """COMPLETED, FAILED, CANCELED or TIMEOUT once inactive (flux-core's rule)."""
        if self.state != INACTIVE:
            return None
        if self.exception is not None:
            etype = self.exception[0]
            return CANCELED if etype == "cancel" else TIMEOUT if etype == "timelimit" else FAILED
        return COMPLETED if self.finish_status == 0 else FAILED

    @property
    def success(self) -> bool:
        return self.result == COMPLETED

    def error_text(self) -> str:
        """Why a job did not succeed, in flux-core's words (``flux job wait``)."""
        if self.exception is not None:
            etype, note = self.exception
            return f"Fatal exception type={etype} {note}"
        return waitstatus_text(self.finish_status or 0)


def exit_code(status: int) -> int:
    """The exit code a wait status gives a command (flux-core's rule).

    The job shell exits with the largest task exit code, or 128+signal for a
    signalled task; a shell itself killed by a signal also gives 128+signal.
    """
    if status & 0x7F:
        return 128 + (status & 0x7F)
    return (status >> 8) & 0xFF


def waitstatus_text(status: int) -> str:
    """What went wrong, for a non-zero wait status ("" for success)."""
    code = exit_code(status)
    if status & 0x7F:
        return f"job shell {signal_name(status & 0x7F)}"
    if code > 128:
        return f"task(s) {signal_name(code - 128)}"
    return f"task(s) exited with exit code {code}" if code else ""


def signal_name(signum: int) -> str:
    """A signal's description, as glibc's strsignal(3) gives it (``Killed``, ``Unknown
    signal 72``: a task's exit code 200 is told as flux tells it)."""
    import signal

    try:
        return signal.strsignal(signum) or f"Unknown signal {signum}"
    except ValueError:
        return f"Unknown signal {signum}"
