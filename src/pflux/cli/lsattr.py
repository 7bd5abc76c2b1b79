"""``pflux lsattr [-v]`` (see ``pflux.cli.attr``)."""

from pflux.cli.attr import lsattr_main as main
from pflux.cli.attr import lsattr_parser as parser

__all__ = ["main", "parser"]
