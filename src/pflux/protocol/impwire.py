"""What job-exec, the shell launcher and the privileged helper (``pflux.imp``) exchange for
a guest's job: the job's J, and its shell's ``Description`` as JSON.

job-exec to the launcher: ``u`` SPAWN_AS (a shellwire record), the payload the
job's userid (decimal), a newline, J, a newline, then the description
(``encode_description``). The launcher passes it on to the helper over a new
connection to the helper's socket, in datagrams of ``SPAWN_CHUNK`` bytes, after
a line of its own: its broker's URI for the tasks (``shellwire.RANK_URI``, empty
for rank 0's); the first datagram carries the guest shell's two sockets (SCM_RIGHTS): its
control socket and its records socket, both ``SOCK_SEQPACKET``. The helper
answers with one record: STARTED, the payload the shell's pid in decimal, or
EXCEPTION, the payload why it refused.

The description travels as JSON, not marshal, because the helper runs as root
and reads it from a process it trusts only to be an allowed user: JSON is safe to
read whatever it holds, and ``decode_description`` reads each field as its type
(msgspec, in one pass), naming the first that is wrong.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Annotated, Any, Final

import msgspec

from pflux.protocol.shellwire import SPAWN_AS, Description

__all__ = [
    "SPAWN_AS",
    "DescriptionError",
    "decode_description",
    "encode_description",
    "spawn_as",
    "split_request",
]

SPAWN_CHUNK: Final = 65536  # the launcher sends a request in datagrams of this size
MAX_REQUEST: Final = 1 << 26  # bytes of a request the helper reads, at most


class DescriptionError(ValueError):
    """A request the helper cannot read: the message names the field and the rule."""


def encode_description(description: Description) -> bytes:
    """A description as JSON (the files' contents in base64)."""
    try:
        return _encode(_Fields(*description))
    except UnicodeEncodeError:  # a path that is not UTF-8: ``json`` escapes its surrogates
        pass
    fields: dict[str, Any] = dict(zip(Description._fields, description, strict=True))
    fields["files"] = [
        [name, base64.b64encode(content).decode(), mode]
        for name, content, mode in description.files
    ]
    return json.dumps(fields, separators=(",", ":")).encode()


def spawn_as(userid: int, signed: str, description: bytes) -> bytes:
    """SPAWN_AS's payload, as job-exec sends it: the userid, J and the description."""
    return b"%d\n%s\n%s" % (userid, signed.encode("ascii"), description)


def split_request(payload: bytes) -> tuple[str, str, str, bytes]:
    """(the URI, the userid, J, the description's JSON) of a request the launcher made
    from SPAWN_AS's payload, its URI line first."""
    parts = payload.split(b"\n", 3)
    if len(parts) != 4:
        raise DescriptionError("request: must be URI, userid and J lines, then a description")
    try:
        return (
            parts[0].decode("ascii"),
            parts[1].decode("ascii"),
            parts[2].decode("ascii"),
            parts[3],
        )
    except UnicodeDecodeError:
        raise DescriptionError("request: the URI, userid and J must be ASCII") from None


def decode_description(data: bytes) -> Description:
    """The description ``encode_description`` made; DescriptionError naming a bad field."""
    try:
        try:
            fields = _decode(data)
        except msgspec.ValidationError:
            raise
        except msgspec.DecodeError:
            # ``json`` writes a path that is not UTF-8 (Python's surrogate escapes) as
            # ``\udcXX``, which msgspec does not read: read as ``json`` does, checked alike
            fields = msgspec.convert(_loads(data), _Fields)
    except msgspec.ValidationError as exc:
        field = _FIELD.search(str(exc))
        if field is None:
            raise DescriptionError(
                f"description: must be an object of {Description._fields}: {exc}"
            ) from None
        raise DescriptionError(f"description: {field[1]}: wrong type or shape: {exc}") from None
    return Description(*msgspec.structs.astuple(fields))


def _loads(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError as exc:
        raise DescriptionError(f"description: not JSON: {exc}") from None


class _Fields(msgspec.Struct, forbid_unknown_fields=True):
    """A description's fields as JSON has them, each of its type and shape, decoded as
    the shell reads them (tuples where it has tuples; the files' contents from base64)."""

    argv: Annotated[list[str], msgspec.Meta(min_length=1)]
    env: dict[str, str]
    tasks: Annotated[
        list[tuple[int, int, tuple[int, ...] | None, str | None]], msgspec.Meta(min_length=1)
    ]
    cwd: str | None
    tmpdirs: tuple[str, ...]
    host: str
    stdin: str | None
    stdout: tuple[tuple[str, ...], bool, bool] | bool
    stderr: tuple[tuple[str, ...], bool, bool] | bool
    pmi: tuple[int, tuple[tuple[int, int, int, int], ...]] | None
    rlimit: list[tuple[int, int]]
    exit_timeout: int | float | None
    exit_on_error: bool
    task_env: list[dict[str, str]] | None
    tmpdir_env: list[str]
    ptys: tuple[int, ...]
    nosetpgrp: bool
    files: list[tuple[str, bytes, int]]
    tmpdir_argv: bool


_decode: Final = msgspec.json.Decoder(_Fields).decode
_encode: Final = msgspec.json.Encoder().encode
_FIELD: Final = re.compile(r" - at `\$\.([a-z_]+)")  # where msgspec says a field is wrong
