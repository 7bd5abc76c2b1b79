"""What every sub-command shares: its parser and the one error boundary.

Errors print as ``pflux-COMMAND: ERROR: message`` (``flux-COMMAND`` as ``flux``) and
exit 1; usage errors exit 2 (argparse's convention). Set ``PFLUX_DEBUG=1`` to see tracebacks.
"""

from __future__ import annotations

import os
import sys

from pflux.errors import PfluxError, RPCError, UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from pflux.cli.options import OptionParser

__all__ = ["PROG", "RPCError", "options", "parser", "run"]

#: the command's name in its usage and messages: ``flux`` when it runs as the flux
#: command of ``pflux.fluxshim`` (flux's users and tools read ``flux-job: ERROR: ...``)
PROG = "pflux"


def parser(name: str, description: str) -> argparse.ArgumentParser:
    """An argument parser whose messages say ``pflux NAME`` (argparse: ``options``
    is the lean choice for a command that runs often and short)."""
    from pflux.cli import argparser

    return argparser.parser(f"{PROG} {name}", description)


def options(name: str, description: str) -> OptionParser:
    """The options of sub-command ``name``: argparse's declarations, parsed without
    importing argparse in the common case (``pflux.cli.options``)."""
    from pflux.cli.options import OptionParser

    return OptionParser(f"{PROG} {name}", description)


def run(name: str, body: Callable[[], int | None]) -> int:
    """Run a sub-command's body, turning pflux errors into one line on stderr."""
    try:
        return body() or 0
    except UsageError as exc:
        _error(name, exc)
        return 2
    except PfluxError as exc:
        _error(name, exc)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went away (e.g. `| head`); silence the interpreter's own complaint
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _error(name: str, exc: Exception) -> None:
    if os.environ.get("PFLUX_DEBUG"):
        import traceback

        traceback.print_exc()
    from pflux.cli.printable import printable

    # each line made printable: a message quoting a user's text cannot drive the terminal
    message = "\n".join(printable(line) for line in str(exc).split("\n"))
    print(f"{PROG}-{name.replace(' ', '-')}: ERROR: {message}", file=sys.stderr)
