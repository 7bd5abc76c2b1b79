"""``sproc ps|kill|wait``: the processes a rank's ``rexec`` service runs (those of
``exec``, ``--bg`` ones included), as ``flux sproc``: listed, signalled, or waited
for (a ``--waitable`` one), named by pid or by ``--label``."""

from __future__ import annotations

import argparse
import os
import sys

from pflux.cli import base
from pflux.errors import PfluxError, UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from pflux import Client

DEFAULT_FORMAT = "{pid:>9} {statex:<3} {flags:<11} {label:<16} {cmd}"


def parser() -> argparse.ArgumentParser:
    p = base.parser("sproc", "List, signal and wait for rexec's subprocesses.")
    sub = p.add_subparsers(dest="command", required=True)
    ps = sub.add_parser("ps", help="list running and zombie subprocesses")
    kill = sub.add_parser("kill", help="send a signal to a subprocess")
    wait = sub.add_parser("wait", help="wait for a waitable subprocess; exit with its code")
    for each in (ps, kill, wait):
        each.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
        each.add_argument("-r", "--rank", type=int, metavar="RANK", help="the broker rank")
        each.add_argument("-s", "--service", default="rexec", metavar="NAME", help="rexec only")
    ps.add_argument("-o", "--format", default=DEFAULT_FORMAT, help="a Python format string")
    ps.add_argument("-n", "--no-header", action="store_true", help="no header line")
    kill.add_argument("-w", "--wait", action="store_true", help="then wait for its status")
    kill.add_argument("signum", type=int, metavar="SIGNUM")
    wait.add_argument("-o", "--output", action="store_true", help="refused: none is retained")
    for each in (kill, wait):
        each.add_argument("target", metavar="PID|LABEL")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return base.run("sproc", lambda: _sproc(args))


def _sproc(args: argparse.Namespace) -> int:
    from pflux import Client

    if args.service != "rexec":
        raise UsageError(f"--service={args.service}: only rexec is served by pflux")
    if getattr(args, "output", False):
        raise UsageError("--output: pflux's rexec retains no output of a background process")
    with Client(args.uri) as client:
        if args.command == "ps":
            _ps(client, args)
            return 0
        if args.command == "kill":
            target = _target(args.target)
            client.rexec_kill(target, args.signum, rank=_rank(args))
            return _wait(client, args, target) if args.wait else 0
        return _wait(client, args, _target(args.target))


def _rank(args: argparse.Namespace) -> int:
    """``-r``'s rank, else -1: the rexec of the broker this command talks to."""
    return -1 if args.rank is None else int(args.rank)


def _target(text: str) -> int | str:
    """A pid, or the label."""
    return int(text) if text.isdigit() else text


def _wait(client: Client, args: argparse.Namespace, target: int | str) -> int:
    status = client.rexec_wait(target, rank=_rank(args))
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _ps(client: Client, args: argparse.Namespace) -> None:
    reply = client.rexec_list(rank=_rank(args))
    rows = []
    for proc in reply["procs"]:
        flags = ",".join(name for name in ("bg", "waitable") if proc[name]) or "-"
        fields = {
            **proc,
            "rank": reply["rank"],
            "flags": flags,
            "label": proc["label"] or "-",
            "statex": proc["state"] + ("+" if proc["attached"] else ""),
        }
        rows.append(fields)
    try:
        if not args.no_header:
            header = {
                name: name.upper()
                for name in ("pid", "state", "statex", "flags", "attached", "label", "rank", "cmd")
            }
            header["statex"] = header["state"] = "STAT"
            print(_format(args.format, header))
        for fields in rows:
            print(_format(args.format, fields))
    except (KeyError, ValueError, IndexError) as exc:
        raise PfluxError(f"--format: {exc}") from None
    sys.stdout.flush()


def _format(fmt: str, fields: dict[str, Any]) -> str:
    """``fmt`` with ``fields``; a number's spec given a header's text applies as text."""
    text = {key: str(value) for key, value in fields.items()}
    return fmt.format(**text)
