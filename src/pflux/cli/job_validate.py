"""``pflux job validate FILE...``: check jobspec files (YAML or JSON) against RFC 25.

Every result line goes to stdout, so that a reader piping the output sees the
problems: ``FILE: ok``, ``FILE: PATH: MESSAGE`` (``FILE: MESSAGE`` for a problem
with the whole document) and ``FILE: ERROR: reason`` for a file that cannot be
read.  The exit status is 0 when every file is valid, 1 otherwise, 2 on a usage
error.  ``-`` reads standard input, reported as ``stdin``.
"""

from __future__ import annotations

import sys

from pflux.cli.base import parser, run
from pflux.errors import JobspecError
from pflux.spec import jobspec

NAME = "job validate"


def _read(filename: str) -> bytes:
    if filename == "-":
        return sys.stdin.buffer.read()
    with open(filename, "rb") as file:
        return file.read()


def _check(filename: str, fmt: jobspec.Format) -> tuple[bool, list[str]]:
    """Whether one file is a valid jobspec, and its result lines."""
    # a name that is not UTF-8 (undecodable bytes from argv) is shown escaped
    shown = "stdin" if filename == "-" else filename.encode(errors="backslashreplace").decode()
    try:
        data = _read(filename)
    except OSError as exc:
        return False, [f"{shown}: ERROR: {exc.strerror or exc}"]
    try:
        jobspec.loads(data, fmt=fmt)
    except JobspecError as exc:
        return False, [
            f"{shown}: {path}: {message}" if path else f"{shown}: {message}"
            for path, message in exc.problems
        ]
    return True, [f"{shown}: ok"]


def main(argv: list[str]) -> int:
    """Validate each file named in ``argv``; exit 1 if any is invalid or unreadable."""
    args_parser = parser(NAME, "Validate jobspec files (YAML or JSON) against RFC 25.")
    args_parser.add_argument(
        "--format",
        choices=("auto", "json", "yaml"),
        default="auto",
        help="how to parse the files (default: JSON if a file starts with '{', else YAML)",
    )
    args_parser.add_argument("files", nargs="+", metavar="FILE", help="a jobspec file, - for stdin")
    args = args_parser.parse_args(argv)

    def body() -> int:
        failed = False
        for filename in args.files:
            ok, lines = _check(filename, args.format)
            failed = failed or not ok
            sys.stdout.write("".join(f"{line}\n" for line in lines))
        sys.stdout.flush()
        return 1 if failed else 0

    return run(NAME, body)
