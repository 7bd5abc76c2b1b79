"""``pflux shutdown [TARGET]``: stop the instance, printing its log as it stops (as
flux-shutdown(1)); TARGET, as ``pflux uri`` reads it (a job id, ``jobid:ID``, a URI),
names another instance: ``pflux shutdown JOBID`` stops the instance a job runs
(``alloc --bg``'s).

Running jobs are canceled with the exception note ``instance shutdown``; pending jobs
stay in the state directory for the next start.
"""

from __future__ import annotations

import argparse
import sys

from pflux.cli import base

INFO, WARNING, DEBUG = 6, 4, 7  # syslog severities: what is printed, at most


def parser() -> argparse.ArgumentParser:
    p = base.parser("shutdown", "Stop the instance.")
    p.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")
    p.add_argument("--background", action="store_true", help="start the shutdown and exit at once")
    p.add_argument("--quiet", action="store_true", help="print only warnings and errors")
    p.add_argument("-v", "--verbose", action="store_true", help="print every log entry")
    p.add_argument("target", nargs="?", help="the instance to stop: a job id or a URI")
    return p


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    return base.run("shutdown", lambda: _shutdown(args))


def _shutdown(args: argparse.Namespace) -> None:
    from pflux import Client
    from pflux.cli import logentry
    from pflux.errors import RPCError, UsageError

    if args.quiet and args.verbose:
        raise UsageError("--quiet and --verbose: choose one")
    level = WARNING if args.quiet else DEBUG if args.verbose else INFO
    uri = args.uri
    if args.target is not None:
        from pflux.cli.uri import resolve

        if args.uri is not None:
            raise UsageError("--uri and TARGET: choose one (TARGET is found from $PFLUX_URI)")
        uri = resolve(args.target)
    with Client(uri) as client:
        if args.background:
            client.shutdown()
            return
        log = client.dmesg(follow=True, new=True)  # asked for before the shutdown begins
        client.shutdown()
        try:
            for entry in log:
                if entry.get("severity", INFO) <= level:
                    sys.stderr.write(logentry.body(entry) + "\n")
        except RPCError:
            pass  # the instance has gone: its log with it
