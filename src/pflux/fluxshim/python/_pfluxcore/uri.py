"""Instance URIs: the socket a ``local://`` URI names, the URI of a socket, the URI
a process's environment gives, and the one a job's nested instance posts.

pflux's instances are reached through UNIX sockets on this host only, so an
instance URI is ``local://PATH`` or a bare PATH. Both faces read URIs through
here and word the ``ValueError`` raised as their own error.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (several ms)
if TYPE_CHECKING:
    from typing import Any, Iterable, Mapping

LOCAL = "local://"

#: the variables naming the instance, in the order pflux's clients read them
ENVIRONMENT = ("PFLUX_URI", "FLUX_URI")

#: the system instance's URI, where a client with none set looks (as flux's finds
#: /run/flux/local); ``SYSTEM_URI_ENV`` moves it, for tests and packagers
SYSTEM_URI = "local:///run/pflux/local"
SYSTEM_URI_ENV = "PFLUX_SYSTEM_URI"


def system_uri(environ: Mapping[str, str]) -> str:
    """The system instance's URI: ``PFLUX_SYSTEM_URI`` in ``environ``, else ``SYSTEM_URI``."""
    return environ.get(SYSTEM_URI_ENV) or SYSTEM_URI


def socket_path(uri: str) -> str:
    """The socket path ``uri`` names (``local://PATH`` or a bare path).

    Raises ValueError with the reason and the scheme: a scheme other than
    ``local`` (that scheme), or no path (an empty scheme).
    """
    if uri.startswith(LOCAL):
        path = uri[len(LOCAL) :]
    elif "://" in uri:
        scheme = uri.split("://", 1)[0]
        raise ValueError(f"connector {scheme} is not supported", scheme)
    else:
        path = uri
    if not path:
        raise ValueError("names no socket", "")
    return path


def uri_for(path: str) -> str:
    """The URI clients use for the socket at ``path``."""
    return LOCAL + os.path.abspath(path)


def from_environment(environ: Mapping[str, str]) -> str | None:
    """The instance URI ``environ`` names (pflux's variable first), or None."""
    for name in ENVIRONMENT:
        if environ.get(name):
            return environ[name]
    return None


def of_process(pid: int) -> str | None:
    """The instance URI in process ``pid``'s environment (pflux's variable first), or None.

    Raises OSError where the environment cannot be read.
    """
    with open(f"/proc/{pid}/environ", "rb") as f:
        items = f.read().split(b"\0")
    environ = {}
    for item in items:
        name, sep, value = item.decode(errors="replace").partition("=")
        if sep:
            environ[name] = value
    return from_environment(environ)


def job_steps(path: str) -> list[str]:
    """The steps of a path of job ids (``jobid:PATH``): ``/`` first for an absolute
    path, then each job id or ``..`` in order."""
    steps = [step for step in path.split("/") if step]
    if path.startswith("/"):
        steps.insert(0, "/")
    return steps


def posted(events: Iterable[Any]) -> Any:
    """The URI a job's nested instance posts (the ``uri`` of a ``memo`` event), read
    from the job's events in order; None if the job finishes first."""
    for event in events:
        if event.name == "memo" and "uri" in event.context:
            return event.context["uri"]
        if event.name == "finish":
            return None
    return None
