"""The ``pflux`` program exits without the interpreter's teardown (``pflux.cli.exit_now``),
its output flushed and its exit code kept, unless something waits for the teardown."""

from __future__ import annotations

import subprocess
import sys

from tests.support.instance import environ

from pflux import __version__

# a global whose finalizer writes: the teardown would run it, a skipped one does not
PROGRAM = """
import sys
class Noisy:
    def __del__(self):
        sys.stderr.write("torn down\\n")
noisy = Noisy()
{extra}
sys.argv = ["pflux", *sys.argv[1:]]
from pflux.cli import command
command()
"""


def _pflux(*args: str, extra: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PROGRAM.format(extra=extra), *args],
        env=environ(),
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_command_exits_without_teardown_its_output_flushed() -> None:
    done = _pflux("--version")
    assert (done.returncode, done.stdout, done.stderr) == (0, f"pflux {__version__}\n", "")
    done = _pflux("no-such-command")
    assert done.returncode == 1
    assert "not a pflux command" in done.stderr
    assert "torn down" not in done.stderr


def test_an_atexit_function_gets_the_usual_exit() -> None:
    done = _pflux("--version", extra="import atexit; atexit.register(print, 'at exit')")
    assert done.returncode == 0
    assert done.stdout == f"pflux {__version__}\nat exit\n"
    assert done.stderr == "torn down\n"


def test_threads_get_the_usual_exit() -> None:
    done = _pflux("--help", extra="import threading")
    assert done.returncode == 0
    assert done.stdout.startswith("usage: pflux")
    assert done.stderr == "torn down\n"
