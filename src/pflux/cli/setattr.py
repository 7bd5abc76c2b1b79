"""``pflux setattr NAME VALUE`` (see ``pflux.cli.attr``)."""

from pflux.cli.attr import setattr_main as main
from pflux.cli.attr import setattr_parser as parser

__all__ = ["main", "parser"]
