"""``pflux uri [TARGET]``: the URI of an instance (flux-uri(1), for what pflux has).

Without TARGET, the instance this command would reach (``--uri``, ``PFLUX_URI``,
``FLUX_URI``, else the system instance), once it has answered. TARGET may be a URI or socket path
(``local://PATH``, checked the same way), ``pid:PID``, a process whose
environment names an instance, or a job id (``jobid:ID`` or a bare id): the URI of
the nested instance the running job posted (its memo ``uri``, ``pflux.cli.nested``),
as flux's jobid resolver; ``--wait`` waits for it to be posted. ``jobid:ID/ID2``
descends into nested instances; ``/`` is the root instance and ``..`` the enclosing
one. ``--local`` asks for the form every pflux URI has.
"""

from __future__ import annotations

import argparse

from pflux.cli import base

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any


def parser() -> argparse.ArgumentParser:
    p = base.parser("uri", "Print the URI of an instance.")
    p.add_argument(
        "--wait",
        action="store_true",
        help="wait for a job's instance to post its URI (none if the job ends first)",
    )
    p.add_argument(
        "--local",
        action="store_true",
        help="the URI's local:// form (pflux's instances have no other)",
    )
    p.add_argument("target", nargs="?", metavar="TARGET", help="local://PATH, pid:PID or a job id")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return base.run("uri", lambda: _uri(args.target, wait=args.wait))


def _uri(target: str | None, *, wait: bool = False) -> None:
    print(resolve(target, wait=wait))


def resolve(target: str | None, *, wait: bool = False) -> str:
    """The URI of ``target`` (as ``uri TARGET`` prints it; None: this command's instance),
    once the instance answers (a job's: once it posted it)."""
    from pflux import Client, socket_path

    uri = None
    if target is not None:
        scheme, sep, rest = target.partition(":")
        if sep and scheme == "pid":
            uri = _from_pid(rest)
        elif sep and scheme == "jobid":
            return _job_path(rest, wait)
        elif sep and scheme != "local" and not rest.startswith("//"):
            from pflux.errors import UsageError

            raise UsageError(f"{target}: unsupported scheme {scheme!r} (local, pid or jobid)")
        elif "/" in target:
            uri = target
        else:
            return _job_path(target, wait)
    with Client(uri) as client:
        return client.attrs().get("local-uri", socket_path(uri))


def _from_pid(text: str) -> str:
    from _pfluxcore.uri import of_process

    from pflux.errors import PfluxError

    try:
        found = of_process(int(text))
    except ValueError:
        raise PfluxError(f"pid:{text}: not a process id") from None
    except OSError as exc:
        raise PfluxError(f"pid:{text}: {exc.strerror}") from None
    if found is None:
        raise PfluxError(f"pid:{text}: process is not in a pflux instance (no PFLUX_URI)")
    return found


def _job_path(path: str, wait: bool) -> str:
    """The URI a path of job ids leads to from the instance this command reaches, one
    instance down a step (``/``: the root, ``..``: the enclosing instance)."""
    from _pfluxcore.uri import job_steps

    from pflux import Client

    uri: str | None = None
    steps = job_steps(path)
    if not steps:
        with Client() as client:
            return client.attrs()["local-uri"]
    for step in steps:
        if step == "/":
            uri = _root(uri)
            continue
        with Client(uri) as client:
            if step == "..":
                attrs = client.attrs()
                level = int(attrs.get("instance-level", "0"))
                uri = attrs["parent-uri"] if level > 0 else attrs["local-uri"]
            else:
                uri = _job_uri(client, step, wait)
    assert uri is not None
    return uri


def _root(uri: str | None) -> str:
    """The URI of the root instance above the one at ``uri``."""
    from pflux import Client

    while True:
        with Client(uri) as client:
            attrs = client.attrs()
        if int(attrs.get("instance-level", "0")) == 0:
            return attrs["local-uri"]
        uri = attrs["parent-uri"]


def _job_uri(client: Any, text: str, wait: bool) -> str:
    """The URI a running job's nested instance posted (``wait``: once it posts it, or
    nothing if the job ends first); flux's errors otherwise."""
    from _pfluxcore.uri import posted

    from pflux.errors import JobIDError, PfluxError, RPCError
    from pflux.spec.fluid import JobID
    from pflux.spec.states import State

    try:
        jobid = JobID.parse(text)
    except JobIDError:
        raise PfluxError(f"{text} is not a valid jobid") from None
    uri = None
    try:
        if wait:
            uri = posted(client.events(jobid))
        else:
            job = client.job_info(jobid, ["state", "annotations"])
            if job.state != State.RUN:
                raise PfluxError(f"jobid {text} is not running")
            uri = ((job.annotations or {}).get("user") or {}).get("uri")
    except RPCError:
        raise PfluxError(f"jobid {text} not found") from None
    if not isinstance(uri, str) or not uri:
        raise PfluxError(f"URI not found for job {text}")
    return uri
