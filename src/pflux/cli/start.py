"""``pflux start [OPTIONS] [COMMAND...]``: run an instance in the foreground.

With COMMAND, it runs inside the instance (PFLUX_URI and FLUX_URI set) and the
instance shuts down when it exits, with its exit code. Without COMMAND and
without ``--state-dir``, as flux's, on a terminal it runs ``$SHELL`` inside;
elsewhere it prints the URI on stdout (and how to use it on stderr) and serves
until ``pflux shutdown`` or a signal. With ``--state-dir`` and no command it
serves, silently, until then. ``--state-dir`` keeps the instance's data
across runs: a directory that already holds an instance's data is restarted.
One whose KVS database was lost (found empty or missing) is refused, unless
``--fresh`` says to start again there with no jobs. The initial program and
every job's tasks have the flux shim (``pflux.fluxshim``: ``flux`` and ``pflux``
commands and the ``flux`` package) first on their paths, unless ``--no-flux-shim`` or
``[shim] enable = false``. Inside a pflux job, the instance is nested over the
job's resources (``pflux.cli.nested``); ``flux broker`` is flux's name for it.
``--simulate=TRACE`` replays a trace of jobs in simulated time (``pflux.sim``);
the instance's resources for it usually come from ``--config``
(``[[resource.config]]`` or ``[resource] path``). ``--config FILE`` (TOML) is
checked before anything starts: a table or key that no service reads, or a
value a service cannot use, is refused naming the file, the table, the key and
the rule (``pflux.broker.config``). ``--test-size=N`` runs N brokers on this machine, ranks
1..N-1 as child processes of this one (``pflux.broker.testsize``), on the hosts
``--test-hosts`` names; ``-S tbon.*`` and ``broker.quorum-timeout`` set the
overlay's fanout, heartbeat and timeout, and how long rank 0 waits for every rank
before it serves. ``-S local-uri=local://PATH`` puts the socket at PATH (the system
instance's, in /run/pflux, which ``pflux.broker.instance`` checks). ``-S
log-filename`` appends the log entries the ring keeps (``-S log-level``) to a file;
``-o`` takes flux broker's options comma-separated. An instance that stops because
something failed exits 1 with the reason on stderr, whatever the initial program's
status, so that a supervisor can tell it from a clean stop.
"""

from __future__ import annotations

import argparse
import os
import sys
from functools import partial
from pathlib import Path

from pflux.cli import base
from pflux.errors import PfluxError, UsageError

TYPE_CHECKING = False
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

    from pflux.broker.boot import Boot


def main(argv: list[str]) -> int:
    parser = base.parser("start", "Run a pflux instance (and, optionally, a command in it).")
    parser.add_argument("--state-dir", type=Path, help="keep the instance's data here")
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="the state directory's KVS database was lost: start again with no jobs",
    )
    parser.add_argument("--cores", type=int, help="cores to manage (default: this machine's)")
    parser.add_argument("--gpus", type=int, help="GPUs to manage (default: this machine's)")
    parser.add_argument(
        "-c",
        "--config",
        "--config-path",  # flux broker's name
        type=Path,
        help="instance configuration (TOML, or JSON when the name ends in .json)",
    )
    parser.add_argument(
        "--simulate", type=Path, metavar="TRACE", help="replay this trace in simulated time"
    )
    parser.add_argument(
        "--wrap",
        metavar="ARGS",
        help="run each broker under these comma-separated arguments (strace,-f or valgrind)",
    )
    parser.add_argument(
        "-s",
        "--test-size",
        metavar="N",
        help="run N brokers on this machine (ranks 0..N-1), each with its share of the cores",
    )
    parser.add_argument(
        "--test-hosts",
        metavar="HOSTLIST",
        help="with --test-size: the hostnames of the ranks, in rank order (RFC 29 hostlist)",
    )
    parser.add_argument(
        "--curve-cert",
        metavar="FILE",
        help="the instance's CURVE certificate (pflux keygen), for brokers started by Slurm",
    )
    parser.add_argument(
        "--no-flux-shim",
        action="store_true",
        help="leave the flux command and module off the initial program's and jobs' paths",
    )
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="log more (repeat for debug)"
    )
    parser.add_argument(
        "-S",
        "--setattr",
        action="append",
        metavar="ATTR=VAL",
        help="flux broker's attributes that pflux honours: statedir (as --state-dir),"
        " log-stderr-level (syslog's 0-7: 6 as -v, 7 as -vv), log-filename (the log"
        " entries dmesg keeps, also appended to this file), log-level (0-7: what they"
        " are, 6 by default), tbon.fanout,"
        " tbon.heartbeat, tbon.timeout, broker.quorum-timeout (durations: FSD),"
        " hostname (this broker's host, as [bootstrap] hosts name it),"
        " local-uri (local://PATH: where clients connect, as the system instance's"
        " local:///run/pflux/local)",
    )
    parser.add_argument(
        "-o",
        "--broker-opts",
        action="append",
        metavar="OPTS",
        help="flux broker's options, comma-separated (-o,-Slog-filename=out): -v,"
        " -S ATTR=VAL, -c FILE",
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="initial program")
    args = parser.parse_args(argv)
    return base.run("start", lambda: _start(args, argv))


#: flux broker's ``-S`` attributes that ``pflux start`` honours
BROKER_ATTRS = (
    "statedir",
    "log-stderr-level",
    "log-filename",
    "log-level",
    "tbon.fanout",
    "tbon.heartbeat",
    "tbon.timeout",
    "broker.quorum-timeout",
    "hostname",
    "local-uri",
)
TBON_DURATIONS = {
    "tbon.heartbeat": "heartbeat",
    "tbon.timeout": "timeout",
    "broker.quorum-timeout": "quorum_timeout",
}


def check_broker_options(options: list[str]) -> None:
    """UsageError naming the first of ``options`` (flux broker's command-line options, as
    ``batch`` and ``alloc`` pass them) that ``pflux start`` would not honour."""
    expected = "-v, -S ATTR=VAL (ATTR: " + ", ".join(BROKER_ATTRS) + "), -c FILE"
    index = 0
    while index < len(options):
        option = options[index]
        name, _, value = option.partition("=")
        if option.startswith("-S") or name == "--setattr":
            text = value if name == "--setattr" else option[2:]
            if not text and index + 1 < len(options):
                index += 1
                text = options[index]
            _broker_attr(text)
        elif option.startswith("-c") or name in ("--config", "--config-path"):
            if option in ("-c", "--config", "--config-path"):
                index += 1
        elif option != "--verbose" and not (option[:1] == "-" and set(option[1:]) == {"v"}):
            raise UsageError(
                f"--broker-opts: {option}: pflux's broker does not take it ({expected})"
            )
        index += 1


def _broker_attr(text: str) -> tuple[str, str]:
    """``ATTR=VAL`` of ``-S``: an attribute pflux honours, and a value it can use."""
    attr, equals, value = text.partition("=")
    if attr not in BROKER_ATTRS:
        raise UsageError(
            f"-S {text}: pflux's broker cannot set attribute {attr!r}"
            f" (it sets: {', '.join(BROKER_ATTRS)})"
        )
    if not equals or not value:
        raise UsageError(f"-S {text}: needs a value ({attr}=VAL)")
    levels = ("log-stderr-level", "log-level")
    if attr in levels and not (value.isascii() and value.isdigit() and int(value) <= 7):
        raise UsageError(f"-S {text}: {attr} must be 0-7")
    if attr == "tbon.fanout" and not (value.isascii() and value.isdigit() and int(value) >= 1):
        raise UsageError(f"-S {text}: tbon.fanout must be an integer >= 1")
    if attr in TBON_DURATIONS:
        _duration(text, attr, value)
    if attr == "local-uri" and not (value.startswith("local:///") and len(value) > 9):
        raise UsageError(f"-S {text}: local-uri must be local:// and an absolute path")
    return attr, value


def _duration(text: str, attr: str, value: str) -> float:
    """A ``-S`` duration (RFC 23, FSD), above 0."""
    from pflux.errors import DurationError
    from pflux.spec import duration

    try:
        seconds = duration.parse(value)
    except DurationError as exc:
        raise UsageError(f"-S {text}: {attr}: {exc}") from None
    if seconds <= 0:
        raise UsageError(f"-S {text}: {attr} must be a duration above 0")
    return seconds


def _apply_broker_opts(args: argparse.Namespace) -> None:
    """``-o OPTS``: flux broker's options, comma-separated, as pflux start's own."""
    for opts in args.broker_opts or ():
        options = [option for option in opts.split(",") if option]
        check_broker_options(options)
        index = 0
        while index < len(options):
            option = options[index]
            name, equals, value = option.partition("=")
            if option.startswith("-S") or name == "--setattr":
                text = value if name == "--setattr" else option[2:]
                if not text:
                    index += 1
                    text = options[index]
                args.setattr = [*(args.setattr or ()), text]
            elif option.startswith("-c") or name in ("--config", "--config-path"):
                path = value if equals and name.startswith("--") else option[2:]
                if option in ("-c", "--config", "--config-path"):
                    index += 1
                    path = options[index]
                if args.config is not None and args.config != Path(path):
                    raise UsageError(
                        f"--broker-opts: {option}: --config={args.config} says otherwise"
                    )
                args.config = Path(path)
            else:
                args.verbose += 1 if option == "--verbose" else len(option) - 1
            index += 1


def _apply_attrs(args: argparse.Namespace) -> None:
    """``-S ATTR=VAL``, as the options they stand for."""
    args.tbon = {}
    args.hostname = None
    args.log_filename = None
    args.log_level = 6
    args.socket_path = None
    for text in args.setattr or ():
        attr, value = _broker_attr(text)
        if attr == "statedir":
            if args.state_dir is not None and args.state_dir != Path(value):
                raise UsageError(f"-S {text}: --state-dir={args.state_dir} says otherwise")
            args.state_dir = Path(value)
        elif attr == "log-stderr-level":
            args.verbose = max(args.verbose, {6: 1, 7: 2}.get(int(value), 0))
        elif attr == "log-filename":
            args.log_filename = Path(value)
        elif attr == "log-level":
            args.log_level = int(value)
        elif attr == "tbon.fanout":
            args.tbon["fanout"] = int(value)
        elif attr == "hostname":
            args.hostname = value
        elif attr == "local-uri":
            args.socket_path = Path(value.removeprefix("local://"))
        else:
            args.tbon[TBON_DURATIONS[attr]] = _duration(text, attr, value)


#: syslog's severities (RFC 5424, flux's log levels) as logging's
SYSLOG_LEVELS = (50, 50, 50, 40, 30, 20, 20, 10)


def _log_file(path: Path, level: int) -> None:
    """``-S log-filename``: the entries the log ring keeps, appended to ``path`` too;
    opened as a job's ``--output`` is, never through another user's link or into
    another user's file in a directory anyone may write in."""
    import logging

    from pflux.safefs.shared import open_output

    try:
        fd = open_output(str(path), append=True)
    except OSError as exc:
        raise UsageError(f"-S log-filename={path}: {exc.strerror or exc}") from None
    handler = logging.StreamHandler(os.fdopen(fd, "a", encoding="utf-8"))
    handler.setLevel(level)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))
    logging.getLogger().addHandler(handler)


def _test_size(args: argparse.Namespace) -> tuple[int, list[str] | None]:
    """``--test-size`` and ``--test-hosts``, checked."""
    if args.test_size is None:
        if args.test_hosts is not None:
            raise UsageError("--test-hosts: only with --test-size")
        return 1, None
    text = args.test_size
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise UsageError(f"--test-size={text}: must be an integer >= 1")
    size = int(text)
    if args.simulate is not None:
        raise UsageError("--test-size: cannot be combined with --simulate (one simulated broker)")
    if args.test_hosts is None:
        return size, None
    from pflux.errors import HostlistError
    from pflux.spec import hostlist

    try:
        hosts = hostlist.decode(args.test_hosts)
    except HostlistError as exc:
        raise UsageError(f"--test-hosts={args.test_hosts}: {exc}") from None
    if len(hosts) != size:
        raise UsageError(
            f"--test-hosts={args.test_hosts}: names {len(hosts)} hosts, --test-size is {size}"
        )
    return size, hosts


#: set in the environment of a ``pflux start`` run under its ``--wrap`` (and taken out
#: of it at once), so that it runs the broker rather than wrap itself again
WRAPPED = "PFLUX_START_WRAPPED"


def _wrap(args: argparse.Namespace, argv: list[str]) -> list[str]:
    """flux start's ``--wrap``: the arguments each broker runs under. This process, rank
    0's broker, runs itself again under them first (ranks above 0 are started under
    them), so what wraps it sees the broker from its start."""
    if args.wrap is None:
        return []
    wrap: list[str] = args.wrap.split(",")
    if not all(wrap):
        raise UsageError(f"--wrap={args.wrap}: an empty argument (ARGS are comma-separated)")
    if os.environ.pop(WRAPPED, None) == args.wrap:
        return wrap  # this is the wrapped run
    again = [sys.executable, "-m", "pflux.cli", "start", *argv]
    try:
        os.execvpe(wrap[0], [*wrap, *again], {**os.environ, WRAPPED: args.wrap})
    except OSError as exc:
        raise UsageError(f"--wrap: cannot run {wrap[0]}: {exc.strerror}") from None


def _start(args: argparse.Namespace, argv: list[str]) -> int:
    import logging

    wrap = _wrap(args, argv)
    _apply_broker_opts(args)
    _apply_attrs(args)
    size, hosts = _test_size(args)

    from pflux.broker.instance import Instance
    from pflux.broker.testsize import Tbon
    from pflux.errors import ConfigError

    level = (logging.WARNING, logging.INFO, logging.DEBUG)[min(args.verbose, 2)]
    logging.basicConfig(format="%(asctime)s %(name)s %(levelname)s: %(message)s")
    root = logging.getLogger()
    for handler in root.handlers:
        handler.setLevel(level)  # stderr says what -v asks; the log ring (dmesg) keeps INFO
    kept = SYSLOG_LEVELS[args.log_level]  # what the ring and log-filename keep
    root.setLevel(min(level, kept))
    if args.log_filename is not None:
        _log_file(args.log_filename, kept)
    config = _config(args)
    if args.fresh and args.state_dir is None:
        raise UsageError("--fresh: only with --state-dir (a temporary instance starts empty)")
    boot = _boot(args, config, size)
    if boot is not None and boot.rank > 0:
        return _serve_rank(args, config, boot)
    attrs = _nest(args, config)
    instance = Instance(
        args.state_dir,
        config=config,
        fresh=args.fresh,
        attrs=attrs,
        test_size=size,
        test_hosts=hosts,
        tbon=Tbon(**args.tbon),
        boot=boot,
        socket_path=args.socket_path,
        wrap=wrap,
    )
    command = args.command or None
    announce = False
    if command is None and args.state_dir is None and args.simulate is None:
        if sys.stdin.isatty():
            command = [os.environ.get("SHELL") or "/bin/sh"]
        else:
            announce = True
    if attrs is not None or announce:
        instance.on_ready = partial(_ready, attrs, announce)
    import uvloop

    try:
        return uvloop.run(instance.run(command))
    except ConfigError as exc:  # name the file the table and key are in
        raise PfluxError(f"{args.config}: {exc}" if args.config else str(exc)) from None
    except PfluxError:
        raise
    except Exception as exc:  # a bug in a service: still a failed instance, and said so
        logging.getLogger("pflux.broker").exception("the instance failed")
        raise PfluxError(f"the instance stopped: internal error: {exc!r}") from exc


def _boot(args: argparse.Namespace, config: dict[str, Any], size: int) -> Boot | None:
    """This broker's place when something else started the instance's brokers
    (``pflux.broker.bootsource``): a ``[bootstrap]`` config, a PMI-1 launcher, Slurm."""
    from pflux.broker.bootsource import resolve

    fanout = args.tbon.get("fanout")
    boot = resolve(
        os.environ, config, hostname=args.hostname, cert_path=args.curve_cert, fanout=fanout
    )
    if boot is not None and size > 1:
        raise UsageError("--test-size: this broker is one of several started elsewhere")
    if boot is not None and args.simulate is not None:
        raise UsageError("--simulate: one simulated broker, not one of several")
    return boot


def _serve_rank(args: argparse.Namespace, config: dict[str, Any], boot: Boot) -> int:
    """Rank > 0: serve until rank 0 says stop; it runs the initial program, not this one."""
    import tempfile

    import uvloop

    from pflux.broker import rankmain
    from pflux.broker.nodeinfo import hello
    from pflux.broker.testsize import Tbon

    tbon = Tbon(**args.tbon)
    temporary = args.state_dir is None
    rundir = Path(tempfile.mkdtemp(prefix="pflux-rank-")) if temporary else args.state_dir
    setup = {
        "boot": boot,
        "rundir": str(rundir),
        "hello": hello(config, boot.hostnames[boot.rank]),
        "attrs": rankmain.instance_attrs(boot, tbon),
        "config": config,
        "heartbeat": tbon.heartbeat,
        "timeout": tbon.timeout,
        "lifeline": False,
    }
    try:
        return uvloop.run(rankmain.run(setup))
    finally:
        if temporary:
            import shutil

            shutil.rmtree(rundir, ignore_errors=True)


def _nest(args: argparse.Namespace, config: dict[str, Any]) -> dict[str, str] | None:
    """Inside a pflux job, a nested instance's attributes; its resources, the job's
    (``pflux.cli.nested``), where neither options nor ``[resource]`` give them."""
    if args.simulate is not None:
        return None
    from pflux.cli.nested import enclosing_job

    found = enclosing_job()
    if found is None:
        return None
    attrs, counts = found
    section = config.setdefault("resource", {})
    if isinstance(section, dict) and not section.keys() & {"config", "path", "cores", "gpus"}:
        section.update(counts)
    return attrs


def _ready(nested: dict[str, str] | None, announce: bool, uri: str) -> None:
    """Once clients may connect: a nested instance tells its job its URI, before its
    initial program runs; one with nothing to run says where it is."""
    if nested is not None:
        from pflux.cli.nested import post_uri

        post_uri(nested, uri)
    if announce:
        _announce(uri)


def _announce(uri: str) -> None:
    """Say where an instance with nothing to run is, and how to use it."""
    print(uri, flush=True)
    print(
        f"pflux-start: serving; use it with: export PFLUX_URI={uri}\n"
        "pflux-start: stop it with `pflux shutdown` or a signal (Ctrl-C)",
        file=sys.stderr,
        flush=True,
    )


def _read_config(path: Path) -> dict[str, Any]:
    """``--config``'s table: TOML, or JSON (flux's conf.json) when the name ends in .json."""
    import json
    import tomllib

    try:
        text = path.read_text()
        if path.suffix != ".json":
            return tomllib.loads(text)
        config = json.loads(text)
    except OSError as exc:
        raise UsageError(f"--config={path}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, ValueError) as exc:
        raise UsageError(f"--config={path}: {exc}") from None
    if not isinstance(config, dict):
        raise UsageError(f"--config={path}: must hold a JSON object")
    return config


def _config(args: argparse.Namespace) -> dict[str, Any]:
    config = {} if args.config is None else _read_config(args.config)
    for name in ("cores", "gpus"):
        value = getattr(args, name)
        if value is not None:
            if value < 0:
                raise UsageError(f"--{name}={value}: must be 0 or more")
            config.setdefault("resource", {})[name] = value
    if args.no_flux_shim:
        shim = config.setdefault("shim", {})
        if not isinstance(shim, dict):
            raise UsageError(f"{args.config}: [shim]: must be a table, got {shim!r}")
        shim["enable"] = False
    if args.simulate is not None:
        section = config.setdefault("simulator", {})
        if not isinstance(section, dict):
            raise UsageError(f"{args.config}: [simulator]: must be a table, got {section!r}")
        section["trace"] = str(args.simulate.absolute())
    return config
