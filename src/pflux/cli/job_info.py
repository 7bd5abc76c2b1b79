"""``pflux job info ID KEY...``: print a job's stored objects, as ``flux job info``.

Keys: ``J`` (the signed jobspec), ``jobspec``, ``R``, ``eventlog`` (through
job-info), the guest logs ``guest.exec.eventlog``, ``guest.output`` and
``guest.input``, and any other key of the guest namespace as ``guest.KEY``
(``guest.application.x``, through job-info: flux's ``job info`` reads any
key). Each value is printed followed by a newline, as flux prints it. Like
flux, ``jobspec`` and ``R`` are the *current* versions, with the job's
``jobspec-update`` / ``resource-update`` events applied; ``--base`` gives
them as first stored, ``--original`` the jobspec as submitted (from J).
"""

from __future__ import annotations

import argparse
import base64
import binascii
import sys

from pflux.cli import base, jobcommon
from pflux.cli.printable import printable_json
from pflux.errors import PfluxError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from pflux import Client
    from pflux.spec.fluid import JobID

NAME = "job"
LOOKUP_KEYS = ("J", "jobspec", "R", "eventlog")
GUEST_KEYS = ("guest.exec.eventlog", "guest.output", "guest.input")
_UPDATES = {"jobspec": "jobspec-update", "R": "resource-update"}


def main(argv: list[str]) -> int:
    parser = base.parser("job info", "Print a job's jobspec, R, J or eventlogs.")
    jobcommon.add_uri(parser)
    parser.add_argument(
        "-o", "--original", action="store_true", help="jobspec: the one submitted, from J"
    )
    parser.add_argument(
        "-b", "--base", action="store_true", help="jobspec, R: without later updates"
    )
    parser.add_argument("jobid", metavar="ID", help="job id (any encoding)")
    parser.add_argument(
        "keys",
        nargs="+",
        metavar="KEY",
        help=f"one of {', '.join(LOOKUP_KEYS + GUEST_KEYS)}, or guest.KEY",
    )
    args = parser.parse_args(argv)
    return base.run(NAME, lambda: _info(args))


def _info(args: argparse.Namespace) -> int:
    from pflux import Client
    from pflux.spec.fluid import JobID

    for key in args.keys:
        if key not in LOOKUP_KEYS and not key.startswith("guest."):
            known = ", ".join(LOOKUP_KEYS + GUEST_KEYS)
            raise PfluxError(f"unknown key {key!r}: expected one of {known} or guest.KEY")
    jobid = JobID.parse(args.jobid)
    with Client(args.uri) as client:
        values = _values(client, jobid, args)
    sys.stdout.write(printable_json("".join(f"{values[key]}\n" for key in args.keys)))
    return 0


def _values(client: Client, jobid: JobID, args: argparse.Namespace) -> dict[str, str]:
    keys: dict[str, None] = {}  # the job-info keys to fetch, in order, once each
    for key in args.keys:
        if key == "jobspec" and args.original:
            keys["J"] = None
        elif key in LOOKUP_KEYS or key not in GUEST_KEYS:  # guest.KEY: through job-info
            keys[key] = None
        if key in _UPDATES and not args.base and not (key == "jobspec" and args.original):
            keys["eventlog"] = None
    stored = client.lookup(jobid, list(keys)) if keys else {}
    values: dict[str, str] = {}
    for key in args.keys:
        if key in GUEST_KEYS:
            values[key] = client.read_log(jobid, key)
        elif key == "jobspec" and args.original:
            values[key] = _unwrap(stored["J"])
        elif key in _UPDATES and "eventlog" in stored and not args.base:
            values[key] = _current(key, stored[key], stored["eventlog"])
        else:
            values[key] = stored[key]
    return values


def _unwrap(signed: str) -> str:
    """The jobspec inside J (``header.payload.signature``, each part base64url)."""
    parts = signed.split(".")
    try:
        if len(parts) != 3:
            raise ValueError("J must have three dot-separated parts")
        payload = parts[1]
        return base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode()
    except (ValueError, binascii.Error) as exc:
        raise PfluxError(f"Failed to unwrap J to get jobspec: {exc}") from None


def _current(key: str, text: str, eventlog: str) -> str:
    """``jobspec`` or ``R`` with the updates in the job's eventlog applied (as stored if none)."""
    from pflux.spec.eventlog import parse

    updates = [e.context or {} for e in parse(eventlog) if e.name == _UPDATES[key]]
    if not updates:
        return text
    import orjson

    value: dict[str, Any] = orjson.loads(text)
    for update in updates:
        if key == "R":
            value.setdefault("execution", {}).update(update)
        else:
            from pflux.spec.replay import apply_jobspec_updates

            apply_jobspec_updates(value, update)
    return orjson.dumps(value).decode()
