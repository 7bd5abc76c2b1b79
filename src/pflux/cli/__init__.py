"""The ``pflux`` command: a thin dispatcher over one module per sub-command.

Only the chosen sub-command's module is imported, so ``pflux --version`` and
every other call pay for nothing they do not use.
"""

from __future__ import annotations

import gc
import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import NoReturn

# sub-command -> module under pflux.cli with a ``main(argv) -> int``
COMMANDS: dict[str, str] = {
    "start": "start",
    "submit": "submit",
    "run": "run",
    "jobs": "jobs",
    "job": "job",
    "kvs": "kvs",
    "resource": "resource",
    "shutdown": "shutdown",
    "cancel": "cancel",
    "queue": "queue",
    "update": "update",
    "uri": "uri",
    "getattr": "getattr",
    "setattr": "setattr",
    "lsattr": "lsattr",
    "version": "version",
    "uptime": "uptime",
    "dmesg": "dmesg",
    # the environment of an instance, and flux's name for a nested one
    "env": "env",
    "broker": "start",
    "bulksubmit": "bulksubmit",
    "batch": "batch",
    "alloc": "alloc",
    "mini": "mini",
    "hostlist": "hostlist",
    "python": "python",
    "pgrep": "pgrep",
    "pkill": "pkill",
    "pstree": "pstree",
    "top": "top",
    "keygen": "keygen",
    "help": "help",
    "exec": "exec",
    "sproc": "sproc",
    "proxy": "proxy",
    "relay": "relay",
    "ping": "ping",
    "event": "event",
    "logger": "logger",
    "module": "module",
    "config": "config",
    "startlog": "startlog",
    "overlay": "overlay",
    "watch": "watch",
}

#: set by the flux command (``pflux.fluxshim``'s ``bin/flux``): name it flux, as flux's do
AS_FLUX_ENV = "PFLUX_AS_FLUX"

USAGE = """\
usage: pflux [--version] COMMAND [ARGS...]

commands:
  start      run an instance (and a command inside it)
  submit     submit a job (--dry-run prints its jobspec)
  run        submit a job and follow it to the end
  jobs       list jobs
  job        job utilities: attach, eventlog, wait-event, info, urgency, ...
  kvs        read and write the KVS
  resource   show the instance's resources
  shutdown   stop the instance
  cancel     cancel jobs
  queue      control the queue: status, enable, disable, start, stop, drain, idle
  update     update an active job's jobspec (duration=+10m, name=...)
  uri        print the URI of an instance
  getattr    print an instance attribute
  setattr    set an instance attribute (log-stderr-level, log-level, log-ring-size)
  lsattr     list the instance's attributes
  version    print pflux's version (and the instance's)
  uptime     show how long the instance has been running
  dmesg      print the instance's log ring buffer
  env        print the environment of an instance (flux, pflux, FLUX_URI), or run in it
  broker     as start: an instance (flux's name for the one a job runs)
  bulksubmit submit a job per input (flux's {} templates, ::: lists or stdin)
  batch      submit a script to run in a nested instance (#flux: directives)
  alloc      run a nested instance interactively: a command, or a shell
  mini       older flux's 'mini run', 'mini submit', ...: the same commands
  hostlist   combine and print hostlists (of jobs, the instance, stdin)
  python     run Python with the flux package importable
  pgrep      list jobs by name pattern or id range
  pkill      cancel jobs by name pattern or id range
  pstree     show jobs as a tree by name
  top        display a live view of resources and running jobs
  keygen     generate a CURVE certificate for an instance's overlay network
  help       list the commands, or show one command's help
  exec       run a command on ranks of the instance, outside any job
  sproc      list, signal and wait for exec's processes (ps, kill, wait)
  proxy      run a command (or a shell) with another instance's URI
  relay      join stdin and stdout to an instance's socket (what proxy ssh:// runs)
  ping       measure the round trip to a service (kvs, RANK!SERVICE, a rank)
  event      publish events (pub) and print those subscribed to (sub)
  logger     append a message to the instance's log ring buffer
  module     list the instance's services (flux's broker modules)
  config     print the instance's configuration (get [NAME])
  startlog   list the instance's start and stop times
  overlay    show the brokers' tree and each subtree's state (status, lookup, parentof)
  watch      copy jobs' output to this terminal until they end
"""


def command() -> NoReturn:
    """The ``pflux`` program (its script, ``python -m pflux.cli``, the instance's ``flux``
    and ``pflux``): ``main``, then its exit code as ``sys.exit``'s (``exit_now``)."""
    exit_now(main())


def exit_now(code: int) -> NoReturn:
    """Exit with ``code`` without the interpreter's teardown: freeing and collecting every
    module's objects, which the process's end frees anyway, costs a short command a
    seventh of its instructions. Standard output and error are flushed first; the usual
    exit runs where anything waits for the teardown (an atexit function, such as
    logging's or a temporary directory's cleanup, or threads) or a flush fails (a closed
    pipe: Python reports it as it always does)."""
    import atexit

    if atexit._ncallbacks() or "threading" in sys.modules:
        sys.exit(code)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # ValueError: a stream the command closed
        sys.exit(code)
    os._exit(code)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``pflux`` console script."""
    # young objects collected rarely, as the broker's (``tune_gc``): loading a command's
    # modules makes thousands that live as long as it does, and no cycles to speak of
    gc.set_threshold(100_000, 50, 100)
    args = sys.argv[1:] if argv is None else argv
    # read once and dropped, so that it reaches no job this command submits
    as_flux = os.environ.pop(AS_FLUX_ENV, None) == "1"
    if args and args[0] in ("-V", "--version"):
        from pflux import __version__

        print(f"pflux {__version__}")
        return 0
    from pflux.cli import base
    from pflux.spec import fluid, jsontext

    jsontext.use_stdlib()  # a command's few messages do not pay for loading orjson
    columns = sys.modules.get("pflux.cli.columns")  # loaded with argparse, where it was
    if columns is not None:  # asked once a command, even where one process runs many
        columns.forget_terminal_columns()
    base.PROG = "flux" if as_flux else "pflux"
    if as_flux and os.environ.get("FLUX_URI"):
        # flux's variable names the instance for the flux command, as for flux-core's:
        # tools point it at another instance (a nested one) with PFLUX_URI left as is
        os.environ["PFLUX_URI"] = os.environ["FLUX_URI"]

    fluid.ascii_prefix(fluid.ascii_f58_preferred())  # job ids print with f, not ƒ, if need be
    return dispatch(base.PROG, COMMANDS, main_usage(), args)


def main_usage() -> str:
    """The command's usage and list of commands, named as it runs (pflux or flux)."""
    from pflux.cli import base

    return USAGE.replace("usage: pflux", f"usage: {base.PROG}")


def dispatch(prog: str, table: dict[str, str], usage: str, argv: list[str]) -> int:
    """Run the sub-command ``argv[0]`` names in ``table`` with the rest of argv."""
    if not argv or argv[0] in ("-h", "--help"):
        sys.stdout.write(usage)
        return 0 if argv else 2
    module = table.get(argv[0])
    if module is None and prog in ("flux", "pflux"):
        from pflux.cli.similar import not_a_command

        return not_a_command(prog, argv[0], table)
    if module is None:
        sys.stderr.write(f"{prog}: '{argv[0]}' is not a command here\n{usage}")
        return 2
    name = f"pflux.cli.{module}"
    __import__(name)  # importlib's import_module, without loading importlib
    command = sys.modules[name]
    rc: int = command.main(argv[1:])
    return rc
