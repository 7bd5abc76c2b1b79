"""Allow ``python -m pflux.cli``."""

from pflux.cli import command

command()
