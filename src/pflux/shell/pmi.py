"""A job's PMI-1 server, in its shell: what MPI libraries start with.

Each task has one end of a socket pair as ``PMI_FD``; MPICH's simple PMI
client asks there for its job's size and key-value space, puts its
address, enters the barrier, and gets the others' addresses. Requests and
answers are flux-core's (``pflux.shell.pmiwire``). The job's keys are held
as in flux-core's shell: ``locals`` the shell made (``PMI_process_mapping``,
``flux.taskmap``), never exchanged; ``pending``, put since the last
barrier; and ``exchanged``. When every task of the shell has entered the
barrier, ``pending`` joins ``exchanged`` and each task is let out. A job
with tasks in other shells (one per rank of R) extends that step into an
exchange: the shell sends job-exec its ``pending`` (``fence``), and lets
its tasks out once job-exec has answered with every shell's (``fenced``).

A shell imports this only when a task first writes to its ``PMI_FD``: most
jobs never do, and a forked shell pays a page fault for every page an
import writes.
"""

from __future__ import annotations

import os

from pflux.shell import pmiwire as wire
from pflux.shell.pmiwire import PMIRequestError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (mypy knows it)
if TYPE_CHECKING:
    import select
    from collections.abc import Callable
    from typing import Any, Final

__all__ = ["PROTOCOL_ERROR", "PMIServer"]

PROTOCOL_ERROR: Final = "PMI-1 wire protocol error"  # flux-core's note for the job's exception
_NOT_IMPLEMENTED: Final = {
    "publish_name": "publish_result",
    "unpublish_name": "unpublish_result",
    "lookup_name": "lookup_result",
}


class PMIServer:
    """One job's PMI-1 server over its tasks' connections (``clients``: fd -> task rank)."""

    __slots__ = (
        "barrier",
        "buffers",
        "clients",
        "exchanged",
        "failed",
        "fence",
        "kvsname",
        "local_size",
        "locals",
        "pending",
        "poller",
        "size",
        "spawning",
    )

    def __init__(
        self,
        clients: dict[int, int],
        poller: select.poll,
        job: tuple[Any, ...],
        fence: Callable[[dict[str, str]], None] | None = None,
    ) -> None:
        """``job``: (its tasks, its RFC 34 task map blocks, its F58 id, the tasks this
        shell runs), as the shell has it from job-exec (``pflux.exec.plan``); ``fence``
        sends the puts of this shell's barrier to the job's other shells."""
        size, taskmap, kvsname, local_size = job
        self.clients = clients  # open connections; closed ones are removed
        self.fence = fence
        self.poller = poller
        self.size = size  # the job's tasks: the universe size
        self.local_size = local_size  # who the barrier waits for
        self.kvsname = kvsname.encode().decode("latin-1")  # wire text is Latin-1 (an F58 id)
        self.locals = _locals(taskmap)
        self.pending: dict[str, str] = {}
        self.exchanged: dict[str, str] = {}
        self.barrier = 0  # barrier_in requests since the last barrier ended
        self.buffers: dict[int, bytes] = {}  # a partial request line, by fd
        self.spawning: set[int] = set()  # fds inside an mcmd=spawn ... endcmd
        self.failed = False  # an exception was raised: the job is ending
        for fd in clients:
            os.set_blocking(fd, False)

    def feed(self, fd: int, data: bytes) -> str | None:
        """Serve what task ``fd`` sent (``b""``: it closed its end); the note of the job's
        exception, if it must end."""
        if not data:
            self.close(fd)
            return None
        buffer = self.buffers.pop(fd, b"") + data
        *lines, rest = buffer.split(b"\n")
        note = None
        try:
            for line in lines:
                note = self._request(fd, line) or note
            if len(rest) > wire.LINE_MAX:
                raise PMIRequestError(f"request longer than {wire.LINE_MAX} bytes")
        except (PMIRequestError, OSError):  # garbage, or a task that does not read its answers
            self.close(fd)
            note = PROTOCOL_ERROR
        else:
            if rest:
                self.buffers[fd] = rest
        if note is None or self.failed:
            return None
        self.failed = True  # one exception per job: later errors are its tasks dying
        return note

    def close(self, fd: int) -> None:
        """Forget task ``fd``'s connection, and close it."""
        if self.clients.pop(fd, None) is not None:
            self.poller.unregister(fd)
            os.close(fd)
        self.buffers.pop(fd, None)
        self.spawning.discard(fd)

    def _request(self, fd: int, line: bytes) -> str | None:
        """Answer one request; the exception's note for an abort."""
        if fd in self.spawning:  # a spawn's lines are ignored, and the spawn fails
            if line.strip() == b"endcmd":
                self.spawning.discard(fd)
                self._send(fd, wire.encode("spawn_result", -1))
            return None
        fields = wire.parse(line)
        cmd = fields.get("cmd")
        if cmd is None:
            if fields.get("mcmd") != "spawn":
                raise PMIRequestError("unknown mcmd")
            self.spawning.add(fd)
        elif cmd == "abort":
            return f"PMI_Abort: {fields.get('error_msg', 'aborted')}"
        elif cmd == "barrier_in":
            self.barrier += 1
            if self.barrier == self.local_size:
                self._barrier_out()
        else:
            self._send(fd, self._answer(cmd, fields, fd))
        return None

    def _answer(self, cmd: str, fields: dict[str, str], fd: int) -> bytes:
        """The answer to a request other than abort, barrier_in and spawn."""
        if cmd == "init":
            return self._init(fields, self.clients.get(fd))
        if cmd == "get_maxes":
            maxes = {"kvsname_max": wire.NAME_MAX, "keylen_max": wire.KEY_MAX}
            return wire.encode("maxes", 0, **maxes, vallen_max=wire.VAL_MAX)
        if cmd == "finalize":
            return wire.encode("finalize_ack", 0)
        if cmd == "get_universe_size":
            return wire.encode("universe_size", 0, size=self.size)
        if cmd == "get_appnum":
            return wire.encode("appnum", 0, appnum=0)
        if cmd == "get_my_kvsname":
            return wire.encode("my_kvsname", 0, kvsname=self.kvsname)
        if cmd == "put":
            return wire.encode("put_result", self._put(fields))
        if cmd == "get":
            return self._get(fields)
        if cmd in _NOT_IMPLEMENTED:
            return wire.encode(_NOT_IMPLEMENTED[cmd], -1, msg="command not implemented")
        raise PMIRequestError(f"unknown cmd {cmd!r}")

    @staticmethod
    def _init(fields: dict[str, str], rank: int | None) -> bytes:
        version = _uint(fields, "pmi_version")
        subversion = _uint(fields, "pmi_subversion")
        if version == 2:
            if rank == 0:
                os.write(2, b"pflux-shell: is application unintentionally using libpmi2.so?\n")
            return wire.encode("response_to_init", -1)
        if version < 1 or (version == 1 and subversion < 1):
            return wire.encode("response_to_init", -1)
        return wire.encode("response_to_init", 0, pmi_version=1, pmi_subversion=1)

    def _put(self, fields: dict[str, str]) -> int:
        key = _word(fields, "key")
        if len(_word(fields, "kvsname")) >= wire.NAME_MAX:
            return wire.PMI_ERR_INVALID_LENGTH
        if len(key) >= wire.KEY_MAX:
            return wire.PMI_ERR_INVALID_KEY_LENGTH
        value = fields.get("value")
        if value is None:
            raise PMIRequestError("put without value")
        if len(value) >= wire.VAL_MAX:
            return wire.PMI_ERR_INVALID_VAL_LENGTH
        (self.locals if key.startswith("local::") else self.pending)[key] = value
        return 0

    def _get(self, fields: dict[str, str]) -> bytes:
        key = _word(fields, "key")
        if len(_word(fields, "kvsname")) >= wire.NAME_MAX:
            return wire.encode("get_result", wire.PMI_ERR_INVALID_LENGTH)
        if len(key) >= wire.KEY_MAX:
            return wire.encode("get_result", wire.PMI_ERR_INVALID_KEY_LENGTH)
        for space in (self.locals, self.pending, self.exchanged):
            if key in space:
                return wire.encode("get_result", 0, value=space[key])
        return wire.encode("get_result", wire.PMI_ERR_INVALID_KEY)

    def _barrier_out(self) -> None:
        """Every task of the shell is in the barrier: what was put is everyone's; let them
        out, or, with tasks in other shells, once theirs have come (``fenced``)."""
        self.barrier = 0
        puts, self.pending = self.pending, {}
        self.exchanged.update(puts)
        if self.local_size < self.size and self.fence is not None:
            self.fence(puts)
        else:
            self._let_out()

    def fenced(self, puts: dict[str, str]) -> None:
        """Every shell of the job is in the barrier, and ``puts`` is what all their tasks
        put: let this shell's tasks out."""
        self.exchanged.update(puts)
        self._let_out()

    def _let_out(self) -> None:
        answer = wire.encode("barrier_out", 0)
        for fd in list(self.clients):
            try:
                self._send(fd, answer)
            except OSError:
                self.close(fd)

    def _send(self, fd: int, answer: bytes) -> None:
        """Answer a task; a task that does not read its answers fills the socket and is cut off."""
        if os.write(fd, answer) != len(answer):
            raise BlockingIOError(fd, "answer cut short")


def _locals(taskmap: tuple[tuple[int, int, int, int], ...]) -> dict[str, str]:
    """The keys the shell makes: where the tasks are, for MPI's node-local shortcuts.

    ``PMI_process_mapping`` is MPICH's ``(vector,(first node,nodes,tasks per node),...)``,
    one triple per block repeat; ``flux.taskmap`` is RFC 34's map.
    """
    triples = [f"({node},{nodes},{ppn})" for node, nodes, ppn, n in taskmap for _ in range(n)]
    mapping = f"(vector,{','.join(triples)})"
    wrapped = f'{{"version":1,"map":{[list(block) for block in taskmap]}}}'.replace(" ", "")
    keys = {"flux.taskmap": wrapped}
    if len(mapping) < wire.VAL_MAX:
        keys["PMI_process_mapping"] = mapping
    return keys


def _uint(fields: dict[str, str], key: str) -> int:
    value = fields.get(key, "")
    if not (value.isascii() and value.isdigit()):
        raise PMIRequestError(f"{key} is not an unsigned integer")
    return int(value)


def _word(fields: dict[str, str], key: str) -> str:
    value = fields.get(key)
    if value is None:
        raise PMIRequestError(f"{key} missing")
    return value
