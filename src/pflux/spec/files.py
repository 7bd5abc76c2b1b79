"""The files a jobspec carries (``attributes.system.files``, RFC 37's file objects),
decoded by job-exec for the job shell (and by the privileged helper, which checks a
guest's), which writes them into ``FLUX_JOB_TMPDIR`` before any task starts (as
flux-core's shell does: ``flux batch`` sends its script so, ``Jobspec.add_file`` any
file).

Each entry is ``NAME: {data, encoding?, mode?}``: ``data`` a string in ``encoding``
(``utf-8`` or ``base64``), or without an encoding any JSON value, written as JSON;
``mode``'s permission bits (default 0600) are the file's, and its type bits make
a regular file (the default), a directory (no ``data``) or a symbolic link
(``data``: its target). ``NAME`` is a path relative to the directory, made of
plain components.
"""

from __future__ import annotations

from collections.abc import Mapping

from pflux.errors import PfluxError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

__all__ = ["decode_files"]

DEFAULT_MODE = 0o600
S_IFMT = 0o170000  # the type bits of a mode, and the types RFC 37 names
S_IFREG = 0o100000
S_IFDIR = 0o040000
S_IFLNK = 0o120000


def decode_files(files: Any) -> list[tuple[str, bytes, int]]:
    """``(relative path, content or link target, mode)`` per file, the mode's type a
    regular file, a directory or a link; PfluxError naming the file and the rule it
    breaks."""
    if not isinstance(files, Mapping):
        raise PfluxError(f"files: must be an object, got {type(files).__name__}")
    return [_decode(name, entry) for name, entry in files.items()]


def _decode(name: str, entry: Any) -> tuple[str, bytes, int]:
    parts = name.split("/")
    if not name or name.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise PfluxError(f"files: {name!r}: must be a relative path without '.' or '..'")
    if not isinstance(entry, Mapping):
        raise PfluxError(f"files: {name}: must be an object")
    mode = entry.get("mode", DEFAULT_MODE)
    if type(mode) is not int or mode < 0:
        raise PfluxError(f"files: {name}: mode must be a non-negative integer")
    kind = mode & S_IFMT or S_IFREG
    if kind not in (S_IFREG, S_IFDIR, S_IFLNK):
        raise PfluxError(f"files: {name}: mode {mode:o} is not a file, directory or link")
    if kind == S_IFDIR:
        return name, b"", S_IFDIR | (mode & 0o7777)
    if "data" not in entry:
        raise PfluxError(f"files: {name}: must have data")
    return name, _content(name, kind, entry["data"], entry.get("encoding")), kind | mode & 0o7777


def _content(name: str, kind: int, data: Any, encoding: Any) -> bytes:
    """A file's bytes, or a link's target."""
    if kind == S_IFLNK and encoding is None:
        if not isinstance(data, str) or not data:
            raise PfluxError(f"files: {name}: a link's data must be its target, a string")
        return data.encode()
    if encoding is None:
        import json

        return json.dumps(data, ensure_ascii=False).encode()
    if not isinstance(data, str):
        raise PfluxError(f"files: {name}: data must be a string with encoding {encoding}")
    if encoding == "utf-8":
        return data.encode()
    if encoding == "base64":
        import base64
        import binascii

        try:
            return base64.b64decode(data, validate=True)
        except binascii.Error as exc:
            raise PfluxError(f"files: {name}: data is not base64: {exc}") from None
    raise PfluxError(f"files: {name}: encoding must be utf-8 or base64, got {encoding!r}")
