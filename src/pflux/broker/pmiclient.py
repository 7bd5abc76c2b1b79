"""A PMI-1 simple wire protocol client: how a broker started by a launcher finds its peers.

The launcher (MPICH's mpiexec, flux-core's or pflux's job shell) gives each task
``PMI_FD`` (a connected socket), ``PMI_RANK`` and ``PMI_SIZE``. Requests and
answers are lines of ``key=value`` words; in an answer ``value=`` runs to the
end of the line. The calls are blocking: a broker makes them once, before its
event loop starts. Each failure is a :class:`PMIError` naming the command and
the server's ``rc``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from types import TracebackType

from pflux.broker.boot import BootstrapError

__all__ = ["PMIClient", "PMIError"]

_LINE_MAX = 4096  # longer than any answer to what this client asks


class PMIError(BootstrapError):
    """A PMI request that failed, or an answer that is not PMI-1."""


class PMIClient:
    """One task's connection to its PMI-1 server, initialized (``init``, ``get_maxes``,
    ``get_my_kvsname``) by :meth:`from_env` or by the constructor."""

    def __init__(self, fd: int, rank: int, size: int) -> None:
        self.fd = fd
        self.rank = rank
        self.size = size
        self._buffer = b""
        answer = self._call("init", "response_to_init", pmi_version="1", pmi_subversion="1")
        version = (answer.get("pmi_version"), answer.get("pmi_subversion"))
        if version != ("1", "1"):
            raise PMIError(f"PMI init: the server speaks version {'.'.join(map(str, version))}")
        maxes = self._call("get_maxes", "maxes")
        self.keylen_max = self._uint(maxes, "keylen_max", "get_maxes")
        self.vallen_max = self._uint(maxes, "vallen_max", "get_maxes")
        kvsname = self._call("get_my_kvsname", "my_kvsname").get("kvsname")
        if not kvsname:
            raise PMIError("PMI get_my_kvsname: the answer has no kvsname")
        self.kvsname = kvsname

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> PMIClient:
        """The client of the task whose environment is ``env``."""
        values = []
        for name in ("PMI_FD", "PMI_RANK", "PMI_SIZE"):
            text = env.get(name)
            if text is None or not (text.isascii() and text.isdigit()):
                raise PMIError(f"PMI: {name}={text!r}: not an integer")
            values.append(int(text))
        fd, rank, size = values
        if rank >= size:
            raise PMIError(f"PMI: PMI_RANK={rank} is not below PMI_SIZE={size}")
        return cls(fd, rank, size)

    def put(self, key: str, value: str) -> None:
        """Put ``key=value`` in the job's KVS, for every task once all have entered a barrier."""
        if len(key) >= self.keylen_max or len(value) >= self.vallen_max:
            raise PMIError(f"PMI put {key}: key or value longer than the server takes")
        self._call("put", "put_result", kvsname=self.kvsname, key=key, value=value)

    def get(self, key: str) -> str:
        """The value another task put under ``key`` before a barrier both entered."""
        value = self._call("get", "get_result", kvsname=self.kvsname, key=key).get("value")
        if value is None:
            raise PMIError(f"PMI get {key}: the answer has no value")
        return value

    def barrier(self) -> None:
        """Wait until every task of the job has entered the barrier."""
        self._call("barrier_in", "barrier_out")

    def finalize(self) -> None:
        """Tell the server this task is done with PMI."""
        self._call("finalize", "finalize_ack")

    def close(self) -> None:
        """Finalize and close the connection."""
        try:
            self.finalize()
        finally:
            os.close(self.fd)

    def __enter__(self) -> PMIClient:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _call(self, cmd: str, answer: str, **fields: str) -> dict[str, str]:
        """Send one request; its answer's words, once its ``cmd`` and ``rc`` are checked."""
        words = "".join(f" {key}={value}" for key, value in fields.items())
        request = f"cmd={cmd}{words}\n".encode()
        try:
            while request:
                request = request[os.write(self.fd, request) :]
            line = self._readline()
        except OSError as exc:
            raise PMIError(f"PMI {cmd}: {exc.strerror or exc}") from None
        if line is None:
            raise PMIError(f"PMI {cmd}: the server closed the connection")
        reply = _parse(line)
        if reply.get("cmd") != answer:
            raise PMIError(f"PMI {cmd}: expected cmd={answer}, got {line.strip()!r}")
        rc = reply.get("rc", "0")
        if rc != "0":
            detail = f": {reply['msg']}" if "msg" in reply else ""
            raise PMIError(f"PMI {cmd}: rc={rc}{detail}")
        return reply

    def _readline(self) -> str | None:
        while b"\n" not in self._buffer:
            if len(self._buffer) > _LINE_MAX:
                raise PMIError(f"PMI: an answer longer than {_LINE_MAX} bytes")
            data = os.read(self.fd, _LINE_MAX)
            if not data:
                return None
            self._buffer += data
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode("latin-1")

    @staticmethod
    def _uint(reply: dict[str, str], key: str, cmd: str) -> int:
        value = reply.get(key, "")
        if not (value.isascii() and value.isdigit()):
            raise PMIError(f"PMI {cmd}: {key}={value!r} is not an unsigned integer")
        return int(value)


def _parse(line: str) -> dict[str, str]:
    """An answer's words; ``value=`` takes the rest of the line."""
    fields: dict[str, str] = {}
    rest = None
    head = line
    at = line.find("value=")
    while at > 0 and not line[at - 1].isspace():
        at = line.find("value=", at + 1)
    if at >= 0:
        head, rest = line[:at], line[at + len("value=") :]
    for word in head.split():
        key, _, value = word.partition("=")
        fields.setdefault(key, value)
    if rest is not None:
        fields.setdefault("value", rest.rstrip("\r"))
    return fields
