"""The files a jobspec carries (``attributes.system.files``, RFC 37's file objects),
decoded by job-exec for the job shell, which writes them into ``FLUX_JOB_TMPDIR``
before any task starts (as flux-core's shell does: ``flux batch`` sends its script so,
``Jobspec.add_file`` any file).

Each entry is ``NAME: {data, encoding?, mode?}``: ``data`` a string in ``encoding``
(``utf-8`` or ``base64``), or without an encoding any JSON value, written as JSON;
``mode``'s permission bits (default 0600) are the file's. ``NAME`` is a path
relative to the directory, made of plain components.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pflux.errors import PfluxError

__all__ = ["decode_files"]

DEFAULT_MODE = 0o600


def decode_files(files: Any) -> list[tuple[str, bytes, int]]:
    """``(relative path, content, permission bits)`` per file; PfluxError naming the
    file and the rule it breaks."""
    if not isinstance(files, Mapping):
        raise PfluxError(f"files: must be an object, got {type(files).__name__}")
    return [_decode(name, entry) for name, entry in files.items()]


def _decode(name: str, entry: Any) -> tuple[str, bytes, int]:
    parts = name.split("/")
    if not name or name.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise PfluxError(f"files: {name!r}: must be a relative path without '.' or '..'")
    if not isinstance(entry, Mapping) or "data" not in entry:
        raise PfluxError(f"files: {name}: must be an object with data")
    mode = entry.get("mode", DEFAULT_MODE)
    if type(mode) is not int or mode < 0:
        raise PfluxError(f"files: {name}: mode must be a non-negative integer")
    data = entry["data"]
    encoding = entry.get("encoding")
    if encoding is None:
        import json

        content = (json.dumps(data, ensure_ascii=False)).encode()
    elif not isinstance(data, str):
        raise PfluxError(f"files: {name}: data must be a string with encoding {encoding}")
    elif encoding == "utf-8":
        content = data.encode()
    elif encoding == "base64":
        import base64
        import binascii

        try:
            content = base64.b64decode(data, validate=True)
        except binascii.Error as exc:
            raise PfluxError(f"files: {name}: data is not base64: {exc}") from None
    else:
        raise PfluxError(f"files: {name}: encoding must be utf-8 or base64, got {encoding!r}")
    return name, content, mode & 0o7777
