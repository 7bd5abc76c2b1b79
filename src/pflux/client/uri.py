"""Finding the instance: ``--uri``, else ``PFLUX_URI``, as ``local:///path/to/socket``."""

from __future__ import annotations

import os

from pflux.errors import PfluxError


class NoInstanceError(PfluxError):
    """No instance was named, or the named one is not there."""


def socket_path(uri: str | None = None) -> str:
    """The socket path an instance URI names (``local://PATH`` or a bare path)."""
    uri = uri or os.environ.get("PFLUX_URI")
    if not uri:
        raise NoInstanceError(
            "no pflux instance: set PFLUX_URI or pass --uri (run commands under `pflux start`)"
        )
    if uri.startswith("local://"):
        path = uri[len("local://") :]
    elif "://" in uri:
        raise NoInstanceError(f"unsupported instance URI {uri!r}: only local:// is supported")
    else:
        path = uri
    if not path:
        raise NoInstanceError(f"instance URI {uri!r} names no socket")
    return path


def uri_for(path: str) -> str:
    """The URI clients use for a socket path."""
    return f"local://{os.path.abspath(path)}"
