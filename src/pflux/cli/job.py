"""``pflux job SUBCOMMAND``: dispatch to one module per job sub-command."""

from __future__ import annotations

from pflux.cli import dispatch

SUBCOMMANDS: dict[str, str] = {
    "validate": "job_validate",
    "id": "job_id",
}

USAGE = """\
usage: pflux job SUBCOMMAND [ARGS...]

subcommands:
  validate   validate jobspec files (YAML or JSON)
  id         convert job ids between encodings
"""


def main(argv: list[str]) -> int:
    """Dispatch ``pflux job``'s sub-commands."""
    return dispatch("pflux-job", SUBCOMMANDS, USAGE, argv)
