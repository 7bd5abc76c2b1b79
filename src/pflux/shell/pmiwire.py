"""The simple PMI-1 wire protocol: a task's request line read, and the answers worded.

Pure. A request is one line of ``key=value`` words, ``cmd=...`` among them
(``mcmd=spawn`` for the multi-line spawn command, which flux-core answers
with a failure). The words ``value=`` and ``error_msg=`` run to the end of
the line, as in flux-core's server, so a value may hold spaces. The limits
and error codes are those of flux-core's PMI-1 server and ``pmi.h``.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (mypy knows it)
if TYPE_CHECKING:  # a forked shell imports this: keep typing out of it
    from typing import Final

__all__ = [
    "KEY_MAX",
    "LINE_MAX",
    "NAME_MAX",
    "PMI_ERR_INVALID_KEY",
    "PMI_ERR_INVALID_KEY_LENGTH",
    "PMI_ERR_INVALID_LENGTH",
    "PMI_ERR_INVALID_VAL_LENGTH",
    "PMI_FAIL",
    "PMIRequestError",
    "encode",
    "parse",
]

KEY_MAX: Final = 64  # bytes of a key, its terminating NUL included
VAL_MAX: Final = 1024  # bytes of a value, likewise
NAME_MAX: Final = 64  # bytes of a KVS name, likewise
LINE_MAX: Final = VAL_MAX + KEY_MAX + NAME_MAX + 64  # the longest request line
PMI_FAIL: Final = -1
PMI_ERR_INVALID_KEY: Final = 4
PMI_ERR_INVALID_KEY_LENGTH: Final = 5
PMI_ERR_INVALID_VAL_LENGTH: Final = 7
PMI_ERR_INVALID_LENGTH: Final = 8
_TO_END: Final = (b"value=", b"error_msg=")  # words that take the rest of the line


class PMIRequestError(ValueError):
    """A request that is not PMI-1: the task gets no answer, and the job fails."""


def parse(line: bytes) -> dict[str, str]:
    """The fields of one request ``line`` (its newline removed); PMIRequestError if it has none.

    Words are split at ASCII white space, as C's ``isspace`` does; bytes are
    read as Latin-1, so any value goes back out as it came in. A word
    repeated keeps its first value.
    """
    if len(line) > LINE_MAX:
        raise PMIRequestError(f"request longer than {LINE_MAX} bytes")
    rest = None
    starts = [(at, key) for key in _TO_END if (at := _word_at(line, key)) >= 0]
    if starts:
        at, key = min(starts)
        rest = (key.decode(), line[at + len(key) :].decode("latin-1"))
        line = line[:at]
    fields: dict[str, str] = {}
    for word in line.split():
        name, eq, value = word.decode("latin-1").partition("=")
        if not eq or not name:
            raise PMIRequestError(f"not a key=value word: {word!r}")
        fields.setdefault(name, value)
    if rest is not None:
        fields.setdefault(rest[0][:-1], rest[1])
    if "cmd" not in fields and "mcmd" not in fields:
        raise PMIRequestError("request has no cmd")
    return fields


def _word_at(line: bytes, prefix: bytes) -> int:
    """Where ``prefix`` begins a word of ``line``, first; -1 if nowhere."""
    at = line.find(prefix)
    while at > 0 and not line[at - 1 : at].isspace():
        at = line.find(prefix, at + 1)
    return at


def encode(cmd: str, rc: int, **fields: object) -> bytes:
    """An answer line: ``cmd=CMD rc=RC`` and ``fields`` in order, with its newline."""
    words = "".join(f" {key}={value}" for key, value in fields.items())
    return f"cmd={cmd} rc={rc}{words}\n".encode("latin-1")
