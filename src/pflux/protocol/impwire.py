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
and reads it from a process it trusts only to be an allowed user: ``json`` is
safe on any input, and ``decode_description`` checks the type of every field,
naming the first that is wrong.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any, Final

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
        fields = json.loads(data)
    except ValueError as exc:
        raise DescriptionError(f"description: not JSON: {exc}") from None
    if not isinstance(fields, dict) or set(fields) != set(Description._fields):
        raise DescriptionError(f"description: must be an object of {Description._fields}")
    values = {name: _check(name, fields[name]) for name in Description._fields}
    return Description(**values)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _string_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(item, str) for item in value.values())


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _ints(value: Any) -> bool:
    return isinstance(value, list) and all(_int(item) for item in value)


def _check(name: str, value: Any) -> Any:
    """The field's value as the shell reads it (tuples where it has tuples)."""
    converted = _CONVERT[name](value)
    if converted is _BAD:
        raise DescriptionError(f"description: {name}: wrong type or shape: {value!r:.200}")
    return converted


_BAD: Final = object()


def _argv(value: Any) -> Any:
    return value if _strings(value) and value else _BAD


def _optional_string(value: Any) -> Any:
    return value if value is None or isinstance(value, str) else _BAD


def _output(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    ok = isinstance(value, list) and len(value) == 3 and _strings(value[0])
    ok = ok and isinstance(value[1], bool) and isinstance(value[2], bool)
    return (tuple(value[0]), value[1], value[2]) if ok else _BAD


def _rlimit(value: Any) -> Any:
    ok = isinstance(value, list) and all(_ints(item) and len(item) == 2 for item in value)
    return [tuple(item) for item in value] if ok else _BAD


def _seconds(value: Any) -> Any:
    ok = value is None or (isinstance(value, int | float) and not isinstance(value, bool))
    return value if ok else _BAD


def _flag(value: Any) -> Any:
    return value if isinstance(value, bool) else _BAD


def _task_env(value: Any) -> Any:
    ok = value is None or (isinstance(value, list) and all(map(_string_map, value)))
    return value if ok else _BAD


def _tasks(value: Any) -> Any:
    if not isinstance(value, list) or not value:
        return _BAD
    tasks = []
    for item in value:
        ok = isinstance(item, list) and len(item) == 4 and _int(item[0]) and _int(item[1])
        ok = (
            ok
            and (item[2] is None or _ints(item[2]))
            and (item[3] is None or isinstance(item[3], str))
        )
        if not ok:
            return _BAD
        tasks.append((item[0], item[1], None if item[2] is None else tuple(item[2]), item[3]))
    return tasks


def _pmi(value: Any) -> Any:
    if value is None:
        return None
    if not (isinstance(value, list) and len(value) == 2 and _int(value[0])):
        return _BAD
    blocks = value[1]
    if not (isinstance(blocks, list) and all(_ints(b) and len(b) == 4 for b in blocks)):
        return _BAD
    return (value[0], tuple(tuple(block) for block in blocks))


def _files(value: Any) -> Any:
    if not isinstance(value, list):
        return _BAD
    files = []
    for item in value:
        ok = isinstance(item, list) and len(item) == 3 and isinstance(item[0], str)
        if not (ok and isinstance(item[1], str) and _int(item[2])):
            return _BAD
        try:
            content = base64.b64decode(item[1], validate=True)
        except binascii.Error:
            return _BAD
        files.append((item[0], content, item[2]))
    return files


_CONVERT: Final = {
    "argv": _argv,
    "env": lambda value: value if _string_map(value) else _BAD,
    "tasks": _tasks,
    "cwd": _optional_string,
    "tmpdirs": lambda value: tuple(value) if _strings(value) else _BAD,
    "host": lambda value: value if isinstance(value, str) else _BAD,
    "stdin": _optional_string,
    "stdout": _output,
    "stderr": _output,
    "pmi": _pmi,
    "rlimit": _rlimit,
    "exit_timeout": _seconds,
    "exit_on_error": _flag,
    "task_env": _task_env,
    "tmpdir_env": lambda value: value if _strings(value) else _BAD,
    "ptys": lambda value: tuple(value) if _ints(value) else _BAD,
    "nosetpgrp": _flag,
    "files": _files,
    "tmpdir_argv": _flag,
}
