"""``pflux getattr NAME`` (see ``pflux.cli.attr``)."""

from pflux.cli.attr import getattr_main as main
from pflux.cli.attr import getattr_parser as parser

__all__ = ["main", "parser"]
