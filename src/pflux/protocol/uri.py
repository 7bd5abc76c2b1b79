"""Finding the instance: ``--uri``, else ``PFLUX_URI``, else ``FLUX_URI`` (flux's name,
set alongside pflux's in jobs and the initial program, so tools written for flux find
the instance; pflux's own name wins where both are set, e.g. a pflux instance run
inside a flux job, except for the ``flux`` command, where FLUX_URI wins as in flux),
as ``local:///path/to/socket`` or a bare path, else the system instance's socket
(``SYSTEM_URI``, as flux's ``flux`` finds its system instance with no FLUX_URI set;
``PFLUX_SYSTEM_URI`` moves it, for tests and packagers); and how long to wait for it to answer:
``timeout=``, else ``PFLUX_TIMEOUT``, else 10 s; and the NoInstanceError each way of
not finding it raises, for both handles.
"""

from __future__ import annotations

import math
import os

from _pfluxcore import uri as _uri

from pflux.errors import NoInstanceError, PfluxError

#: the system instance's URI (``pflux start -S local-uri=`` in the unit, etc/pflux.service)
SYSTEM_URI = _uri.SYSTEM_URI
#: where the system instance is instead, for tests and packagers
SYSTEM_URI_ENV = _uri.SYSTEM_URI_ENV


def system_uri() -> str:
    """The system instance's URI: ``PFLUX_SYSTEM_URI``, else ``SYSTEM_URI``."""
    return _uri.system_uri(os.environ)


def socket_path(uri: str | None = None) -> str:
    """The socket path an instance URI names (``local://PATH`` or a bare path); with
    none given or set, the system instance's, if its socket is there."""
    uri = uri or _uri.from_environment(os.environ)
    if not uri:
        system = system_uri()
        path = _path(system)
        if not os.path.exists(path):
            raise NoInstanceError(
                f"no pflux instance: PFLUX_URI is not set and there is no system instance"
                f" at {system}: set PFLUX_URI or pass --uri (run commands under `pflux start`)"
            )
        return path
    return _path(uri)


def _path(uri: str) -> str:
    try:
        return _uri.socket_path(uri)
    except ValueError as exc:
        if exc.args[1]:
            raise NoInstanceError(
                f"unsupported instance URI {uri!r}: only local:// is supported"
            ) from None
        raise NoInstanceError(f"instance URI {uri!r} names no socket") from None


uri_for = _uri.uri_for


TIMEOUT_ENV = "PFLUX_TIMEOUT"
DEFAULT_TIMEOUT = 10.0


def client_timeout(timeout: float | None = None) -> float | None:
    """Seconds a client waits for an answer it did not ask to wait for; None: no limit.

    ``timeout`` (else PFLUX_TIMEOUT, else 10) is a number of seconds; 0 means no limit.
    """
    if timeout is not None:
        return _seconds("timeout", timeout, repr(timeout))
    text = os.environ.get(TIMEOUT_ENV, "")
    if not text:
        return DEFAULT_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    return _seconds(TIMEOUT_ENV, value, repr(text))


def _seconds(what: str, value: float, shown: str) -> float | None:
    if not math.isfinite(value) or value < 0:
        raise PfluxError(f"{what}: must be a number of seconds (0: no limit), got {shown}")
    return value or None


def cannot_connect(path: str, exc: OSError) -> NoInstanceError:
    """Connecting to the socket at ``path`` failed with ``exc``."""
    return NoInstanceError(f"cannot connect to the instance at {path}: {exc.strerror}")


def unanswered(uri: str, timeout: float | None) -> NoInstanceError:
    """Nothing at ``uri`` answered the connection's ping within ``timeout`` seconds."""
    return NoInstanceError(f"no pflux instance answered at {uri} (timed out after {timeout:g} s)")


def hung_up(uri: str) -> NoInstanceError:
    """What is at ``uri`` hung up on the connection's ping."""
    return NoInstanceError(f"no pflux instance answered at {uri}: it hung up")


def not_an_instance(uri: str, detail: object) -> str:
    """What is at ``uri`` sent bytes that are not a message (``detail``)."""
    return f"{uri} is not a pflux instance: {detail}"
