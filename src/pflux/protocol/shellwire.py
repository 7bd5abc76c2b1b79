"""The records job-exec, the shell launcher and the job shells exchange, and a job's description.

One layout serves every hop: a kind byte, the job id (8 bytes), the shell's
rank (4 bytes: the broker rank it runs for; a job has a shell per rank of its
R) and the payload's length (4 bytes), big-endian, then the payload. A shell
sends whole records in datagrams, straight to job-exec on a socket every shell
shares.

Everything keyed by a shell (the launcher's tables, the journal, the spool
file ``exec/spool/<key>``, RESUME and ACK offsets) is keyed by one int, the
shell's key (``shell_key``): the job id plus the rank shifted past it, so
that the key of a job's rank 0 shell is its job id. ``split`` gives the key,
``record`` takes it; only job-exec takes it apart (``key_job``, ``key_rank``).

job-exec to the launcher (which passes the job's on to its shell):

- ``p`` SPAWN: give the job to a shell; the payload is the job's
  ``Description`` (below), which the launcher passes on as it is;
- ``k`` KILL: signal every task of the job (payload: the signal number in
  decimal);
- ``t`` TERMINATE: signal the shell's whole session (job-exec's last resort);
- ``a`` ACK: the shell's records up to this offset (decimal) are in the KVS:
  the shell may forget them (and, once its last record is, exit);
- ``r`` RESUME: a new job-exec takes the job over: the shell sends its records
  again from this offset (decimal), the first the KVS does not hold, on the
  socket the launcher passes along with the record;
- ``i`` INPUT: standard input for tasks: a flag (``d`` data, ``e`` end of
  file), the number of ranks (4 bytes, 0 for every task), the ranks (4 bytes
  each), then the data;
- ``F`` FENCE: every shell of the job has entered PMI's barrier: the payload
  is the union of what their tasks put (a JSON object of strings), after
  which the shell lets its tasks out;
- ``z`` WINSIZE: the size of the job's ptys: rows and columns, in decimal,
  space-separated;
- ``q`` QUIT (job id 0): job-exec is stopping for good: end every job;
- ``A`` ATTACH (job id 0): a new job-exec, after its broker died; the
  shells' new socket comes with it (SCM_RIGHTS);
- ``u`` SPAWN_AS: a guest's job, run as its user by the privileged helper
  whose socket ``IMP_SOCKET`` names (``pflux.protocol.impwire``), on a records
  socket of the job's own (``SOCK_SEQPACKET``), which job-exec makes: the shell's
  end comes with the record (SCM_RIGHTS, in the send that carries the record's
  first byte or an earlier one; a send passes one for each SPAWN_AS whose first
  byte it carries, in their order, up to ``SPAWN_AS_ENDS``), and job-exec reads
  its own end as the job's (whose records come there rather than on the shells'
  socket, and on which job-exec sends that shell its KILL, ACK, INPUT, WINSIZE,
  FENCE and RESUME). The launcher passes the end on with the request, to the
  helper or to a guest's shell kept from the user's job before (its first
  datagram), and keeps its copy until the helper has answered: a job the helper
  refuses is EXITED (below) before job-exec sees its socket end.

A shell whose launcher died to the next one, as the first record of a
connection to ``exec/sock``: ``j`` REJOIN, the payload its pid (decimal),
with a new socket to the shell (SCM_RIGHTS) in place of the one it had.

The launcher to a shell, besides the above: ``d`` DETACH: job-exec is gone;
keep what is not acknowledged in the spool file until one resumes the job.
The launcher to a spare shell, waiting for a job: ``J`` JOURNAL (job id 0): the
journal was rewritten, and the new file comes with it (SCM_RIGHTS): record
the next job's start there.
A shell to the launcher: ``D`` DONE: everything the job's shell sent is in
the KVS, and the shell waits for its next job (a SPAWN).

job-exec to a guest's shell, first on the job's own records socket: ``m``
RENDEZVOUS, the payload the instance's rejoin timeout (seconds, decimal), with a
descriptor (``O_PATH``, SCM_RIGHTS) of the directory ``exec/guests``: if job-exec
goes, the shell keeps its records and connects to ``<that directory>/<key>``
(``SOCK_SEQPACKET``), which a restarted job-exec listens on, until the timeout;
there job-exec sends RESUME (its offset alone: the connection is the new socket).

A shell to job-exec (the bytes of these records, counted from the first, are
the offsets ACK and RESUME name):

- ``s`` STARTED: the tasks are running since the time in the payload
  (seconds since the epoch), followed by a space, the shell's host, a space
  and ``RANK:PID`` of each task, comma-separated; or their launch failed (the
  time alone), which an EXCEPTION record follows;
- ``x`` EXCEPTION: a fatal ``exec`` exception; the payload is its note;
- ``l`` LOG: a line for the job's output eventlog's shell log: its level
  (decimal, flux-core's shell levels) and its message, space-separated;
- ``o`` OUTPUT: what a task wrote, in whole lines unless its stream is
  unbuffered: the stream (``o`` stdout, ``e`` stderr), the task rank (4
  bytes), then the bytes;
- ``f`` EOF: a task's stream is closed (stream and rank, as for OUTPUT);
- ``F`` FENCE: every task of the shell has entered PMI's barrier, in a job
  with other shells: the payload is what its tasks put since the last
  (a JSON object of strings: a guest's shell is the guest's, and what job-exec
  reads from one can at worst fail to decode); job-exec answers every shell with
  the union
  once each has sent its own;
- ``w`` EXITED: the shell's wait status in decimal, always its last record.

The launcher to job-exec: ``w`` EXITED when a shell could not send it (it
died, or never ran: then ``-1`` and a reason, or it ended before a new
job-exec resumed it: ``-2``, its records are in its spool; ``-3`` and a reason: a
shell given the job by a launcher that died ended before it recorded itself, so
none of the job's tasks ran); ``L`` LIVE, the answer to
ATTACH (in the job id's place, the launcher's pid): a line per job whose
shell runs (``ID``) or ended while no job-exec was there without saying how
(``ID STATUS``). A launcher also sends LIVE unasked, a line per job, when
shells of a launcher that died rejoin it.

SPAWN's payload, a job's ``Description``, is planned by job-exec
(``pflux.exec.plan``) so that the shell, forked per job, reads no jobspec or
R: a tuple of plain values, ``marshal``-encoded (the launcher runs the same
interpreter, and marshal needs no import), which both ends read through the
one definition of its fields below. The shell rebuilds it with
``Description(*marshal.loads(payload))``.
"""

from __future__ import annotations

import _operator
import _socket
import _struct
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (mypy knows it)
if TYPE_CHECKING:  # the launcher and the shells import this: keep typing out of them
    from typing import Final
    from typing import NamedTuple as _Fields
else:
    _Fields = tuple

__all__ = [
    "ACK",
    "ALL_RECORDS",
    "ATTACH",
    "DETACH",
    "DONE",
    "EOF",
    "EXCEPTION",
    "EXITED",
    "EXITED_SPOOLED",
    "EXITED_UNSTARTED",
    "FD_SIZE",
    "FENCE",
    "HEADER",
    "IMP_SOCKET",
    "INPUT",
    "INPUT_DATA",
    "INPUT_EOF",
    "JOURNAL",
    "KILL",
    "LAUNCHER_COMMAND",
    "LIVE",
    "LOG",
    "OUTPUT",
    "QUIT",
    "RANK_URI",
    "REJOIN",
    "REJOIN_TIMEOUT",
    "RENDEZVOUS",
    "RESUME",
    "SPAWN",
    "SPAWN_AS",
    "SPAWN_AS_ENDS",
    "STARTED",
    "STDERR",
    "STDOUT",
    "TERMINATE",
    "WINSIZE",
    "Description",
    "Record",
    "input_record",
    "key_job",
    "key_name",
    "key_rank",
    "let_go",
    "passed_fds",
    "record",
    "shell_key",
    "split",
]

HEADER: Final = _struct.Struct("!cQII")
RANK_SHIFT: Final = 64  # a shell key's rank is above its job id's 64 bits
_JOB_BITS: Final = (1 << RANK_SHIFT) - 1

SPAWN: Final = b"p"
SPAWN_AS: Final = b"u"
SPAWN_AS_ENDS: Final = 64  # records sockets' ends passed with one send to the launcher, at most
FD_SIZE: Final = 4  # a descriptor passed with SCM_RIGHTS
KILL: Final = b"k"
TERMINATE: Final = b"t"
ACK: Final = b"a"
RESUME: Final = b"r"
INPUT: Final = b"i"
WINSIZE: Final = b"z"
FENCE: Final = b"F"
QUIT: Final = b"q"
ATTACH: Final = b"A"
DETACH: Final = b"d"
REJOIN: Final = b"j"
DONE: Final = b"D"
JOURNAL: Final = b"J"
LIVE: Final = b"L"
RENDEZVOUS: Final = b"m"
OUTPUT: Final = b"o"
EOF: Final = b"f"
STARTED: Final = b"s"
EXCEPTION: Final = b"x"
EXITED: Final = b"w"
LOG: Final = b"l"
STDOUT: Final = b"o"  # the stream bytes of OUTPUT and EOF
STDERR: Final = b"e"
INPUT_DATA: Final = b"d"  # the flags of INPUT
INPUT_EOF: Final = b"e"
# the note of a job whose shell lost its launcher and found none to rejoin
LAUNCHER_DIED: Final = "job shell launcher died"
# How job-exec starts the launcher: ``python -c LAUNCHER_COMMAND FD RECORDS JOURNAL``. Not
# ``-m``, whose runpy machinery would stay in memory, a megabyte more for every fork to copy.
LAUNCHER_COMMAND: Final = (
    "import sys; from pflux.shell.launcher import main; sys.exit(main(sys.argv))"
)
IMP_SOCKET: Final = "PFLUX_IMP"  # the launcher's environment: the privileged helper's socket
RANK_URI: Final = "PFLUX_RANK_URI"  # a launcher of a rank > 0: its broker, for the tasks
# seconds its shells wait for a restarted instance when launcher and broker die together
REJOIN_TIMEOUT: Final = "PFLUX_REJOIN_TIMEOUT"
ALL_RECORDS: Final = 1 << 62  # ACK's or RESUME's offset past any record: forget everything
EXITED_SPOOLED: Final = -2  # EXITED's status for a shell that ended into its spool
EXITED_UNSTARTED: Final = -3  # EXITED's status for a shell that ended before the job started

Record = tuple[bytes, int, bytes]  # (kind, shell key, payload)


class Description(_Fields):
    """What a shell runs for one job (SPAWN's payload), as job-exec planned it.

    The shell reads no option: what only some jobs need is None, or empty,
    when unused.
    """

    argv: list[str]  # the command
    # the environment every task shares: the jobspec's, with FLUX_JOB_ID, FLUX_JOB_SIZE,
    # FLUX_JOB_NNODES, PFLUX_URI, FLUX_URI (the same), PFLUX_KVS_NAMESPACE,
    # FLUX_KVS_NAMESPACE (the same), FLUX_JOB_ID_PATH and the flux shim on PATH and
    # PYTHONPATH with PFLUX_PYTHON (pflux.fluxshim); the shell adds FLUX_JOB_TMPDIR
    env: dict[str, str]
    # per task (rank, local id, the CPUs to bind it to or None: all of the instance's,
    # its CUDA_VISIBLE_DEVICES or None: left alone)
    tasks: list[tuple[int, int, tuple[int, ...] | None, str | None]]
    cwd: str | None  # None: the launcher's
    tmpdirs: tuple[str, ...]  # where FLUX_JOB_TMPDIR may be made, best first
    host: str  # the host name that notes give
    stdin: str | None  # the file each task reads; None: a pipe fed from the job's input
    # per stream, for one written to files (paths, one per task or one for all; append;
    # label), or for one kept in the KVS whether it is line-buffered (whole lines are sent)
    stdout: tuple[tuple[str, ...], bool, bool] | bool
    stderr: tuple[tuple[str, ...], bool, bool] | bool
    # PMI-1's (ntasks, RFC 34 task map blocks); None when the pmi option turns it off or,
    # unset, the job has one task
    pmi: tuple[int, tuple[tuple[int, int, int, int], ...]] | None
    # (resource, soft limit) to set while the tasks are spawned: those that differ from
    # job-exec's, which the launcher and its shells have
    rlimit: list[tuple[int, int]]
    exit_timeout: float | None  # seconds after the first task exits for the rest to exit
    exit_on_error: bool  # a task failing is a fatal exception
    task_env: list[dict[str, str]] | None  # per task, env-expand variables that name it
    tmpdir_env: list[str]  # variables whose {{tmpdir}} the shell fills in
    ptys: tuple[int, ...]  # the ranks of the tasks on a pty (pflux.exec.terminal)
    nosetpgrp: bool  # the tasks stay in the shell's process group (a pty's get a session)
    # the jobspec's files (pflux.spec.files): (relative path, content, permission bits),
    # written into FLUX_JOB_TMPDIR before any task starts
    files: list[tuple[str, bytes, int]]
    tmpdir_argv: bool  # the command names {{tmpdir}}, which the shell fills in


def _name_items(cls: type[tuple[object, ...]]) -> None:
    """Make ``cls`` the tuple its annotations name the items of, as ``NamedTuple`` would,
    without importing typing (which the launcher, and so every shell it forks, would carry).
    """
    fields = tuple(cls.__annotations__)
    by_name = _operator.itemgetter(*fields)  # job-exec builds one per job: keep it cheap
    usage = f"{cls.__name__} takes its fields ({', '.join(fields)}) all by position or all by name"

    def new(klass: type[tuple[object, ...]], *values: object, **named: object) -> object:
        if named:
            if values or len(named) != len(fields):
                raise TypeError(usage)
            try:
                values = by_name(named)
            except KeyError:
                raise TypeError(usage) from None
        elif len(values) != len(fields):
            raise TypeError(usage)
        return tuple.__new__(klass, values)

    cls.__new__ = new  # type: ignore[assignment]
    cls._fields = fields  # type: ignore[attr-defined]
    for index, name in enumerate(fields):
        setattr(cls, name, property(_operator.itemgetter(index)))


if not TYPE_CHECKING:  # mypy reads Description as the NamedTuple it declares
    _name_items(Description)

_pack = HEADER.pack
_unpack = HEADER.unpack_from
_SIZE: Final = HEADER.size


def shell_key(jobid: int, rank: int) -> int:
    """The key of job ``jobid``'s shell on broker rank ``rank`` (rank 0's: the job id)."""
    return jobid | rank << RANK_SHIFT


def key_job(key: int) -> int:
    """The job id of a shell key."""
    return key & _JOB_BITS


def key_rank(key: int) -> int:
    """The broker rank of a shell key."""
    return key >> RANK_SHIFT


def key_name(key: int) -> str:
    """A shell key as messages name it: the job id, and the rank unless it is 0."""
    rank = key >> RANK_SHIFT
    return f"{key & _JOB_BITS} (rank {rank})" if rank else str(key)


def record(kind: bytes, key: int, payload: bytes = b"") -> bytes:
    """One record of the shell ``key`` (a job id: its rank 0 shell), ready to send."""
    return _pack(kind, key & _JOB_BITS, key >> RANK_SHIFT, len(payload)) + payload


def let_go(key: int) -> bytes:
    """The records that end the running shell ``key`` for good: its session killed
    (TERMINATE, SIGKILL) and everything it has not sent forgotten (ACK past it all)."""
    return record(TERMINATE, key, b"9") + record(ACK, key, b"%d" % ALL_RECORDS)  # 9: SIGKILL


def input_record(key: int, ranks: list[int] | None, data: bytes, *, eof: bool = False) -> bytes:
    """An INPUT record: ``data`` (or the end of file) for ``ranks`` (None: every task)."""
    targets = ranks or []
    payload = b"".join(
        (
            INPUT_EOF if eof else INPUT_DATA,
            len(targets).to_bytes(4, "big"),
            b"".join(rank.to_bytes(4, "big") for rank in targets),
            data,
        )
    )
    return record(INPUT, key, payload)


def split(data: bytes | bytearray | memoryview, start: int = 0) -> tuple[list[Record], int]:
    """The whole records in ``data`` from ``start``, and the offset where the rest begins."""
    found: list[Record] = []
    end = len(data)
    with memoryview(data) as view:  # released before the caller resizes a bytearray
        while end - start >= _SIZE:
            kind, jobid, rank, length = _unpack(view, start)
            stop = start + _SIZE + length
            if stop > end:
                break
            key = jobid | rank << RANK_SHIFT if rank else jobid
            found.append((kind, key, view[start + _SIZE : stop].tobytes()))
            start = stop
    return found, start


def passed_fds(ancillary: list[tuple[int, int, bytes]]) -> list[int]:
    """The descriptors a message carried (SCM_RIGHTS)."""
    return [
        int.from_bytes(data[i : i + FD_SIZE], sys.byteorder)
        for level, kind, data in ancillary
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS
        for i in range(0, len(data) - FD_SIZE + 1, FD_SIZE)
    ]
