"""RFC 37 file objects: what ``Jobspec.add_file`` puts in a jobspec and what
``flux.util.Fileref`` is.

A leaf both use, so that neither imports the other, and a jobspec does not load
``flux.util``.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from typing import Any

__all__ = ["fileref"]


def fileref(data: Any, perms: int, encoding: str | None) -> dict[str, Any]:
    """An RFC 37 file object: a mapping's JSON, data already encoded, or a local file read."""
    ref: dict[str, Any] = {"mode": perms | stat.S_IFREG}
    if isinstance(data, dict):
        ref["data"] = data
    elif encoding is not None:
        if encoding not in ("base64", "utf-8"):
            raise ValueError(f"invalid encoding: {encoding}")
        ref["data"] = data
        ref["encoding"] = encoding
    else:
        info = os.stat(data)
        ref["size"] = info.st_size
        ref["mode"] = info.st_mode
        with open(data, "rb") as infile:
            content = infile.read()
        try:
            ref["data"] = content.decode("utf-8")
            ref["encoding"] = "utf-8"
        except UnicodeError:
            import base64

            ref["data"] = base64.b64encode(content).decode("utf-8")
            ref["encoding"] = "base64"
    return ref
