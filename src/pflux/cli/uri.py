"""``pflux uri [TARGET]``: the URI of an instance (flux-uri(1), for what pflux has).

Without TARGET, the instance this command would reach (``--uri``, ``PFLUX_URI``,
``FLUX_URI``), once it has answered. TARGET may be a URI or socket path
(``local://PATH``, checked the same way) or ``pid:PID``, a process whose
environment names an instance. A pflux job never runs an instance, so a job id
(``jobid:ID`` or a bare id) is refused, naming the job.
"""

from __future__ import annotations

import argparse

from pflux.cli import base


def parser() -> argparse.ArgumentParser:
    p = base.parser("uri", "Print the URI of an instance.")
    p.add_argument("target", nargs="?", metavar="TARGET", help="local://PATH, pid:PID or a job id")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return base.run("uri", lambda: _uri(args.target))


def _uri(target: str | None) -> None:
    from pflux.api import Client
    from pflux.client.uri import socket_path

    uri = None
    if target is not None:
        scheme, sep, rest = target.partition(":")
        if sep and scheme == "pid":
            uri = _from_pid(rest)
        elif sep and scheme == "jobid":
            _job(rest)
        elif sep and scheme != "local" and not rest.startswith("//"):
            from pflux.errors import UsageError

            raise UsageError(f"{target}: unsupported scheme {scheme!r} (local, pid or jobid)")
        elif "/" in target:
            uri = target
        else:
            _job(target)
    with Client(uri) as client:
        print(client.attrs().get("local-uri", socket_path(uri)))


def _from_pid(text: str) -> str:
    from pathlib import Path

    from pflux.errors import PfluxError

    try:
        environ = Path(f"/proc/{int(text)}/environ").read_bytes()
    except ValueError:
        raise PfluxError(f"pid:{text}: not a process id") from None
    except OSError as exc:
        raise PfluxError(f"pid:{text}: {exc.strerror}") from None
    found = dict(item.split(b"=", 1) for item in environ.split(b"\0") if b"=" in item)
    for name in (b"PFLUX_URI", b"FLUX_URI"):
        if found.get(name):
            return found[name].decode(errors="replace")
    raise PfluxError(f"pid:{text}: process is not in a pflux instance (no PFLUX_URI)")


def _job(text: str) -> None:
    """A job id: never an instance. Say whether the job exists, as flux does."""
    from pflux.api import Client
    from pflux.errors import JobIDError, PfluxError, RPCError
    from pflux.spec.fluid import JobID

    try:
        jobid = JobID.parse(text)
    except JobIDError:
        raise PfluxError(f"{text} is not a valid jobid") from None
    with Client() as client:
        try:
            client.lookup(jobid, ["eventlog"])
        except RPCError:
            raise PfluxError(f"jobid {text} not found") from None
    raise PfluxError(f"URI not found for job {text}: pflux jobs do not run instances")
