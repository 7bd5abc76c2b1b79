"""The job options of ``flux submit`` (and ``run``, ``batch``...): options in, a job request out.

Names, defaults and meanings follow flux-core's submission commands
(``flux/cli/base.py``, ``MiniCmd`` and ``SubmitBaseCmd``) so that a Flux user
types the same options and gets the same jobspec; see ``job_request`` for the
order in which they are applied, which is flux-core's too.  Bad values are
reported as ``--OPTION=VALUE: why`` and exit 1, as in flux-core; argparse's
own usage errors exit 2.
"""

from __future__ import annotations

import os
import sys

from _pfluxcore import envrules, submitopts
from _pfluxcore import rlimits as rlimit_rules

from pflux.cli import options
from pflux.errors import (
    DependencyError,
    DurationError,
    JobspecError,
    SpecError,
    UsageError,
)
from pflux.spec import builder

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, NamedTuple, NoReturn
else:
    from pflux.spec.typedtuple import NamedTuple

__all__ = [
    "JobRequest",
    "Requests",
    "RuleCache",
    "add_options",
    "dry_run_text",
    "job_request",
]

URGENCY_NAMES = {"hold": 0, "default": 16, "expedite": 31}
URGENCY_MAX = 31
SUBMIT_FLAGS = ("debug", "waitable", "novalidate")


class JobRequest(NamedTuple):
    """What a submission sends: the jobspec and the request's own fields."""

    jobspec: dict[str, Any]
    urgency: int
    flags: frozenset[str]
    # --input given as an idset of task ranks: stdin is fed at attach, not from a file
    input_ranks: str | None


class _Ordered(options.OptionAction):
    """Append ``(const, value)`` to a list that several options share, in command-line order.

    flux-core applies ``--env``, ``--env-remove`` and ``--env-file`` as one
    ordered list of rules, and ``--dependency`` with ``--begin-time`` likewise.
    """

    def __call__(
        self,
        parser: Any,
        namespace: options.Args,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        items = getattr(namespace, self.dest, None) or []
        items.append((self.const, values))
        setattr(namespace, self.dest, items)


def add_options(
    parser: options.OptionParser, *, jobspec_format: bool = True, slots: bool = False
) -> None:
    """Add the job options and the trailing ``COMMAND [ARGS...]`` to ``parser``;
    ``--format`` (how ``--dry-run`` prints the jobspec) only with ``jobspec_format``.
    ``slots``: the resource options of ``batch`` and ``alloc``, which ask for slots
    (``-n/--nslots``, ``-c/--cores-per-slot``, ``-g/--gpus-per-slot``) and have no
    per-resource options, ``--taskmap`` nor ``--label-io``."""
    parser.allow_abbrev = False  # flux-core spells long options out in full
    res = parser.add_argument_group("resources")
    unit = "slot" if slots else "task"
    res.add_argument(
        "-n",
        "--nslots" if slots else "--ntasks",
        dest="ntasks",
        metavar="N",
        help="number of slots to allocate" if slots else "number of tasks to start (default 1)",
    )
    res.add_argument(
        "-c", f"--cores-per-{unit}", dest="cores_per_task", metavar="N", help=f"cores per {unit}"
    )
    res.add_argument(
        "-g", f"--gpus-per-{unit}", dest="gpus_per_task", metavar="N", help=f"GPUs per {unit}"
    )
    res.add_argument(
        "-N",
        "--nodes",
        metavar="N",
        help=f"spread the {unit}s over N nodes; without -n, one {unit} per node, exclusively",
    )
    res.add_argument("-x", "--exclusive", action="store_true", help="with -N, allocate whole nodes")
    if slots:
        parser.set_defaults(
            cores=None, tasks_per_node=None, tasks_per_core=None, gpus_per_node=None, taskmap=None
        )
        parser.set_defaults(label_io=False)
        _add_job_options(parser, jobspec_format=jobspec_format, label_io=False)
        return
    per = parser.add_argument_group(
        "per-resource options (not with -n, -c or -g)",
    )
    per.add_argument("--cores", metavar="N", help="request N cores in all")
    per.add_argument("--tasks-per-node", metavar="N", help="run N tasks on every node")
    per.add_argument("--tasks-per-core", metavar="N", help="run N tasks on every core")
    per.add_argument("--gpus-per-node", metavar="N", help="with -N, request N GPUs per node")
    parser.add_argument(
        "--taskmap",
        metavar="URI",
        help="how task ranks map to nodes: block (the default) or cyclic[:N]",
    )
    _add_job_options(parser, jobspec_format=jobspec_format, label_io=True)


def _add_job_options(parser: options.OptionParser, *, jobspec_format: bool, label_io: bool) -> None:
    job = parser.add_argument_group("job")
    job.add_argument(
        "-t",
        "--time-limit",
        "--time",  # what older flux, which took abbreviations, read as --time-limit
        metavar="MIN|FSD",
        help="time limit: minutes when no unit is given, else a Flux standard duration (2h, 30s)",
    )
    job.add_argument("--job-name", metavar="NAME", help="name the job")
    job.add_argument("-q", "--queue", metavar="NAME", help="submit to queue NAME")
    job.add_argument("-B", "--bank", metavar="BANK", help="charge the job to bank BANK")
    job.add_argument(
        "--urgency",
        metavar="N",
        default="16",
        help="urgency 0-31, or hold (0), default (16), expedite (31)",
    )
    job.add_argument("--cwd", metavar="DIRECTORY", help="working directory (default: this one)")
    job.add_argument(
        "--dependency",
        dest="dependencies",
        action=_Ordered,
        const="uri",
        metavar="URI",
        help="an RFC 26 dependency, SCHEME:VALUE[?KEY=VAL[&KEY=VAL...]] (repeatable)",
    )
    job.add_argument(
        "--requires",
        "--require",  # flux's alias
        action="append",
        metavar="CONSTRAINT",
        help="run only where CONSTRAINT (RFC 35: host:NAMES, rank:IDS, properties,"
        " with and, or, not) holds; every rank of the instance must meet it (repeatable)",
    )
    job.add_argument(
        "--begin-time",
        dest="dependencies",
        action=_Ordered,
        const="begin-time",
        metavar="+FSD|TIME",
        help="start no earlier than TIME: +FSD from now, a date, a time, today, tomorrow",
    )
    job.add_argument(
        "-S",
        "--setattr",
        action="append",
        metavar="KEY[=VAL]",
        help="set jobspec attribute KEY (system. is implied unless KEY starts with user. or .);"
        " VAL is JSON or else a string (default 1); ^KEY=FILE reads JSON from FILE (repeatable)",
    )
    job.add_argument(
        "-o",
        "--setopt",
        action="append",
        metavar="KEY[=VAL]",
        help="set job shell option KEY, VAL as for --setattr (repeatable)",
    )
    job.add_argument(
        "--signal",
        metavar="[SIG][@TIME]",
        help="send signal SIG at TIME before the job's time limit expires"
        " (default SIG is SIGUSR1, default TIME is 60s)",
    )
    job.add_argument(
        "--flags",
        action="append",
        metavar="FLAGS",
        help="comma-separated submission flags: debug, waitable, novalidate",
    )

    env = parser.add_argument_group("environment and limits (rules apply in order)")
    env.add_argument(
        "--env",
        dest="env",
        action=_Ordered,
        const="",
        metavar="RULE",
        help="-PATTERN drops, PATTERN copies, NAME=VALUE sets ($NAME expands),"
        " ^FILE reads rules from FILE; the default passes the whole environment",
    )
    env.add_argument(
        "--env-remove",
        dest="env",
        action=_Ordered,
        const="-",
        metavar="PATTERN",
        help="drop variables matching PATTERN (a glob, or /regex/)",
    )
    env.add_argument(
        "--env-file",
        dest="env",
        action=_Ordered,
        const="^",
        metavar="FILE",
        help="apply the rules in FILE, one per line (as --env=^FILE)",
    )
    env.add_argument(
        "--rlimit",
        action="append",
        metavar="RULE",
        help="resource limits to pass on: -NAME drops, NAME passes, NAME=VALUE sets"
        " (default: all but memlock, ofile, msgqueue, nice, rtprio, rttime, sigpending)",
    )

    io = parser.add_argument_group("standard I/O")
    io.add_argument("--input", metavar="FILENAME", help="read stdin from FILENAME")
    io.add_argument("--output", metavar="TEMPLATE", help="write stdout to TEMPLATE")
    io.add_argument("--error", metavar="TEMPLATE", help="write stderr to TEMPLATE")
    if label_io:
        io.add_argument(
            "-l", "--label-io", action="store_true", help="label output lines with task ranks"
        )
    io.add_argument("-u", "--unbuffered", action="store_true", help="do not buffer output")

    parser.add_argument(
        "--dry-run",
        "--dry",  # flux's alias
        action="store_true",
        help="print the jobspec instead of submitting it",
    )
    if jobspec_format:
        parser.add_argument(
            "--format",
            choices=("json", "yaml"),
            default="json",
            help="how --dry-run prints the jobspec (default json)",
        )
    parser.add_argument("command", nargs=options.REMAINDER, help="job command and arguments")


def job_request(
    args: options.Args,
    *,
    environ: Mapping[str, str],
    cwd: str,
    now: float,
    rlimits: Mapping[str, int],
    rules: RuleCache | None = None,
) -> JobRequest:
    """Turn parsed options into a validated jobspec and the request's fields.

    ``environ``, ``cwd`` (used unless ``--cwd``), ``now`` (epoch seconds, for
    ``--begin-time``) and ``rlimits`` (``current_rlimits()``) describe the
    submitting process; ``rules`` keeps what the ``--env`` and ``--rlimit`` rules
    gave for jobs built with the same ``environ`` and ``rlimits``.  As in flux-core,
    options apply in this order: the counts and stdio, then env-expand and rlimit
    shell options, dependencies, constraints (``--requires``), ``--setopt`` and last
    ``--setattr``, which may override anything.
    """
    rules = RuleCache() if rules is None else rules
    flags = _flags(args.flags)
    urgency = _urgency(args.urgency)
    stdin, input_ranks = _input(args.input)
    env_rules = tuple(prefix + value for prefix, value in args.env or ())
    try:
        environment, env_expand = rules.environment(env_rules, environ)
    except ValueError as exc:
        _fail(str(exc))
    counts = _per_resource(args)
    jobspec = (builder.from_command if counts is None else builder.per_resource)(
        _command(args.command),
        **(_counts(args) if counts is None else counts),
        duration=_time_limit(args.time_limit),
        environment=environment,
        cwd=cwd if args.cwd is None else args.cwd,
        name=args.job_name,
        input=stdin,
        output=args.output,
        error=args.error,
        label_io=args.label_io,
        unbuffered=args.unbuffered,
        queue=args.queue,
        bank=args.bank,
    )
    if env_expand:
        builder.set_shell_option(jobspec, "env-expand", env_expand)
    try:
        limits = rules.rlimits(tuple(_split_commas(args.rlimit)), rlimits)
    except ValueError as exc:
        _fail(str(exc))
    if limits:
        builder.set_shell_option(jobspec, "rlimit", limits)
    if args.signal is not None:
        builder.set_shell_option(jobspec, "signal", _signal(args.signal))
    if args.taskmap is not None:
        builder.set_shell_option(jobspec, "taskmap", _taskmap(args.taskmap))
    if args.dependencies:
        dependencies = [_dependency(kind, text, now) for kind, text in args.dependencies]
        builder.set_attr(jobspec, "system.dependencies", dependencies)
    if args.requires:
        builder.set_attr(jobspec, "system.constraints", _constraints(args.requires))
    _set_keyvals(jobspec, "--setopt", args.setopt, builder.set_shell_option)
    _set_keyvals(jobspec, "--setattr", args.setattr, builder.set_attr)
    if "novalidate" not in flags:
        from pflux.spec.jobspec import validate

        validate(jobspec)
    return JobRequest(jobspec, urgency, flags, input_ranks)


def request_for(args: options.Args) -> JobRequest:
    """``job_request`` for this process: its environment, directory, clock and rlimits."""
    return Requests()(args)


class RuleCache:
    """What each list of ``--env`` and of ``--rlimit`` rules gave, for jobs built from
    one environment and one set of rlimits: the many jobs of one command (``--cc``,
    ``bulksubmit``) apply each distinct list once, not once a job (matching patterns
    against every variable is most of a job's building). Each job gets its own copy.
    A rule that fails is not kept: it fails again for the next job that has it."""

    def __init__(self) -> None:
        self._environments: dict[tuple[str, ...], tuple[dict[str, str], dict[str, str]]] = {}
        self._rlimits: dict[tuple[str, ...], dict[str, int]] = {}

    def environment(
        self, rules: tuple[str, ...], environ: Mapping[str, str]
    ) -> tuple[dict[str, str], dict[str, str]]:
        """``envrules.filter_environment``'s environment and env-expand templates."""
        found = self._environments.get(rules)
        if found is None:
            found = self._environments[rules] = envrules.filter_environment(rules, environ)
        return dict(found[0]), dict(found[1])

    def rlimits(self, rules: tuple[str, ...], current: Mapping[str, int]) -> dict[str, int]:
        """``rlimits.filter_rlimits``'s limits."""
        found = self._rlimits.get(rules)
        if found is None:
            found = self._rlimits[rules] = rlimit_rules.filter_rlimits(rules, current)
        return dict(found)


class Requests:
    """``job_request`` for jobs submitted from this process, as ``request_for``: its
    environment and rlimits read once, when made, its directory when a job first
    needs it, and the ``--env`` and ``--rlimit`` rules kept (``RuleCache``), so the
    copies of ``submit --cc`` and the jobs of ``bulksubmit`` each cost only what
    differs between them."""

    def __init__(self) -> None:
        self.environ = dict(os.environ)
        self.rlimits = rlimit_rules.current_rlimits()
        self.rules = RuleCache()
        self._cwd: str | None = None  # read when a job without --cwd needs it

    def __call__(self, args: options.Args) -> JobRequest:
        import time

        cwd: str | None = args.cwd
        if cwd is None:
            if self._cwd is None:
                self._cwd = os.getcwd()
            cwd = self._cwd
        return job_request(
            args,
            environ=self.environ,
            cwd=cwd,
            now=time.time(),
            rlimits=self.rlimits,
            rules=self.rules,
        )


def dry_run_text(jobspec: Mapping[str, Any], fmt: str) -> str:
    """The jobspec as ``--dry-run`` prints it: flux-core's JSON (one line), or YAML."""
    if fmt == "yaml":
        from pflux.spec.jobspec import dumps_yaml

        return dumps_yaml(jobspec)
    import json

    return json.dumps(jobspec, ensure_ascii=False) + "\n"


def _command(command: Sequence[str]) -> list[str]:
    args = list(command)
    if args[:1] == ["--"]:  # the user's separator between options and command
        del args[0]
    if not args:
        raise UsageError("job command and arguments are missing")
    return args


def _count(option: str, text: str | None, minimum: int) -> int | None:
    if text is None:
        return None
    if not (text.isascii() and text.isdigit()) or int(text) < minimum:
        _bad(option, text, f"must be an integer >= {minimum}")
    return int(text)


def _counts(args: options.Args) -> dict[str, Any]:
    """flux-core's rule: -N without -n runs one task per node, on whole nodes."""
    ntasks = _count("--ntasks", args.ntasks, 1)
    nodes = _count("--nodes", args.nodes, 1)
    exclusive: bool = args.exclusive
    if ntasks is None and nodes is not None:
        ntasks, exclusive = nodes, True
    return {
        "num_tasks": 1 if ntasks is None else ntasks,
        "cores_per_task": _count("--cores-per-task", args.cores_per_task, 1) or 1,
        "gpus_per_task": _count("--gpus-per-task", args.gpus_per_task, 0),
        "num_nodes": nodes,
        "exclusive": exclusive,
    }


def _per_resource(args: options.Args) -> dict[str, Any] | None:
    """flux-core's per-resource request (``--cores``, ``--tasks-per-node``/``core``,
    ``--gpus-per-node``): the arguments of ``builder.per_resource``, or None without one."""
    per_node = _count("--tasks-per-node", args.tasks_per_node, 1)
    per_core = _count("--tasks-per-core", args.tasks_per_core, 1)
    gpus = _count("--gpus-per-node", args.gpus_per_node, 0)
    cores = _count("--cores", args.cores, 1)
    nodes = _count("--nodes", args.nodes, 1)
    if per_node is not None and per_core is not None:
        _fail("Do not specify both the number of tasks per node and per core")
    if gpus and not nodes:
        _fail("--gpus-per-node requires --nodes")
    if per_node is None and per_core is None and gpus is None and cores is None:
        return None
    if args.ntasks is not None or args.cores_per_task is not None or args.gpus_per_task:
        _fail("Per-resource options can't be used with per-task options. (See --help for details)")
    return {
        "ncores": cores,
        "nnodes": nodes,
        "per_resource_type": None if per_node is None and per_core is None else
                             "node" if per_node is not None else "core",
        "per_resource_count": per_node if per_node is not None else per_core,
        "gpus_per_node": gpus,
        "exclusive": args.exclusive or bool(nodes and cores is None),
    }  # fmt: skip


def _taskmap(uri: str) -> dict[str, str]:
    """``--taskmap=SCHEME[:VALUE]`` as flux-core writes it, if pflux can map tasks so."""
    import re

    from pflux.spec.shell_options import taskmap_scheme

    scheme, _, value = uri.partition(":")
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*", scheme):
        _bad("--taskmap", uri, "not a SCHEME[:VALUE] URI")
    entry = {"scheme": scheme, "value": value}
    try:
        taskmap_scheme(entry)
    except ValueError as exc:
        _bad("--taskmap", uri, str(exc))
    return entry


def _fail(message: str) -> NoReturn:
    raise JobspecError([("", message)])


def _bad(option: str, value: str, why: str) -> NoReturn:
    """Refuse ``--OPTION=VALUE``, saying why, as flux-core words it."""
    _fail(f"{option}={value}: {why}")


def _time_limit(text: str | None) -> float | None:
    """Minutes when the value is a bare number (flux-core's ``-t``), else FSD."""
    if text is None:
        return None
    from pflux.spec import duration

    try:
        seconds = duration.parse(text, default_unit="m")
    except DurationError as exc:
        raise DurationError(f"--time-limit: {exc}") from None
    if seconds == float("inf"):
        raise DurationError(f"--time-limit={text}: must be finite (0 means no limit)")
    return seconds


def _input(text: str | None) -> tuple[str | None, str | None]:
    """``--input``: a file to read stdin from, or an idset of task ranks (flux-core's rule)."""
    if text is None:
        return None, None
    import re  # here, as a short command does without it

    if re.fullmatch(r"\[?[0-9]+(?:-[0-9]+)?(?:,[0-9]+(?:-[0-9]+)?)*\]?", text):
        return None, text
    return text, None


def _urgency(text: str) -> int:
    if text in URGENCY_NAMES:
        return URGENCY_NAMES[text]
    if text.isascii() and text.isdigit() and int(text) <= URGENCY_MAX:
        return int(text)
    raise SpecError(f"--urgency={text}: must be 0-{URGENCY_MAX}, hold, default or expedite")


def _signal(text: str) -> dict[str, Any]:
    """``--signal=[SIG][@TIME]``: the ``signal`` shell option, flux-core's defaults filled in."""
    from pflux.spec import duration

    def seconds(when: str) -> float:
        try:
            return duration.parse(when)
        except DurationError as exc:
            raise ValueError(f"--signal={text}: {exc}") from None

    try:
        return submitopts.signal_option(text, seconds)
    except ValueError as exc:
        _fail(str(exc))


def _flags(values: Sequence[str] | None) -> frozenset[str]:
    flags = frozenset(_split_commas(values))
    for flag in sorted(flags):
        if flag not in SUBMIT_FLAGS:
            expected = ", ".join(SUBMIT_FLAGS)
            raise SpecError(f'--flags: unknown flag "{flag}" (expected {expected})')
    return flags


def _split_commas(values: Sequence[str] | None) -> list[str]:
    return [item for value in values or () for item in value.split(",")]


def _dependency(kind: str, text: str, now: float) -> dict[str, Any]:
    from pflux.spec import dependency

    try:
        if kind == "begin-time":
            return dependency.begin_time(text, now=now)
        parsed = dependency.parse_uri(text)
        if parsed["scheme"] == "after":
            print("dependency scheme 'after' is deprecated, use 'afterstart'", file=sys.stderr)
        return parsed
    except DependencyError as exc:
        option = "--begin-time" if kind == "begin-time" else "--dependency"
        raise DependencyError(f"{option}: {exc}") from None


def _constraints(queries: Sequence[str]) -> dict[str, Any]:
    """``--requires``, all of them joined by AND as flux joins them: RFC 31's object."""
    from pflux.spec import constraint

    query = " ".join(queries)
    try:
        return constraint.parse(query)
    except SpecError as exc:
        raise SpecError(f"--requires='{query}': {exc}") from None


def _keyval(option: str, text: str) -> tuple[str, Any]:
    """``KEY[=VAL]`` of --setattr and --setopt: VAL as JSON if it parses, else text; 1 if absent.

    ``^KEY=FILE`` takes the value from FILE, which must hold JSON.
    """
    key, equals, value = text.partition("=")
    if key.startswith("^"):
        key = key.lstrip("^")
        if not equals or not value:
            _bad(option, text, "^KEY needs =FILE")
        return key, _read_json(option, value)
    if not equals:
        return key, 1
    return key, _json_or_text(value)


def _json_or_text(text: str) -> Any:
    from pflux.spec import jsonlean

    return jsonlean.value_or(text, text)


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON data")


def _read_json(option: str, path: str) -> Any:
    import json

    try:
        with open(path, encoding="utf-8") as file:
            return json.load(file, parse_constant=_reject_constant)
    except OSError as exc:
        raise JobspecError([("", f"{option}: {path}: {exc.strerror or exc}")]) from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, NaN
        raise JobspecError([("", f"{option}: {path}: {exc}")]) from None


def _set_keyvals(
    jobspec: dict[str, Any],
    option: str,
    texts: Sequence[str] | None,
    setter: Callable[[dict[str, Any], str, Any], None],
) -> None:
    for text in texts or ():
        key, value = _keyval(option, text)
        try:
            setter(jobspec, key, value)
        except JobspecError as exc:
            _bad(option, text, str(exc))
