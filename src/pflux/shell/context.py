"""What the launcher gives every job shell it forks (``Context``), and the shells' warnings.

Made once in the launcher, before any fork, so a shell copies it rather than
building it per job.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (mypy knows it)
if TYPE_CHECKING:  # the launcher imports this before it forks: keep typing out of it
    from _socket import socket

__all__ = ["Context", "warn"]


class Context:
    """What the launcher gives every shell it forks, made once, before any fork."""

    __slots__ = (
        "boot",
        "cpus",
        "cwd",
        "devnull",
        "exec_dir",
        "guest_dir",
        "instance_uid",
        "journal",
        "path",
        "records",
        "rejoin_timeout",
        "spool",
        "uri",
    )

    def __init__(
        self,
        *,
        journal: int,
        boot: bytes,
        devnull: int,
        cpus: tuple[int, ...],
        cwd: str,
        path: str | None,
        records: socket,
        spool: str,
        exec_dir: int,
        uri: str | None = None,
        rejoin_timeout: float = 0.0,
    ) -> None:
        self.records = records  # the datagram socket every shell sends job-exec its records on
        self.journal = journal  # the journal, open for appending
        self.boot = boot  # the boot id its records carry
        self.devnull = devnull  # stdin for tasks of a job whose input is closed
        self.cpus = cpus  # the CPUs the shell may use, and tasks not bound elsewhere
        self.cwd = cwd  # the launcher's working directory, a shell's between jobs
        self.path = path  # the launcher's PATH
        self.spool = spool  # the directory spool files go in
        self.uri = uri  # the broker of this rank, when it is not the job's rank 0's
        # a descriptor of the directory of exec/sock (any path length); a guest's shell,
        # run as its user by the privileged helper, has none, no journal (-1) and no spool ("")
        self.exec_dir = exec_dir
        # seconds a shell whose launcher died, with nobody on exec/sock, waits for a
        # restarted instance before it kills its tasks (0: it kills them at once)
        self.rejoin_timeout = rejoin_timeout
        # a guest's shell: where a restarted job-exec listens for it (a descriptor of
        # exec/guests, from job-exec's RENDEZVOUS; -1: none), and the instance's uid
        self.guest_dir = -1
        self.instance_uid = -1


def warn(message: str) -> None:
    """Tell the instance owner (a shell's stderr is the broker's)."""
    sys.stderr.write(f"pflux-shell: {message}\n")
