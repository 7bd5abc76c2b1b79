"""What ``batch`` and ``alloc`` share: their options, and the job that runs a nested
instance (``flux broker [BROKER-OPTS] COMMAND``) over the slots they ask for.

As flux-core's, they ask for slots (``-n/--nslots`` of ``-c`` cores and ``-g``
GPUs each, or ``-N`` whole nodes) and the instance runs one broker on the first
node. pflux's instance spans one host, so the job has one task (a ``total``
task count of 1, where flux-core runs a broker per node): the broker's nested
instance manages the job's resources on that node (``pflux.cli.nested``).
``--broker-opts`` are checked against what ``pflux start`` honours
(``pflux.cli.start.check_broker_options``) before anything is submitted;
``--conf`` travels in the jobspec's files as ``conf.json``, which the broker
reads (``-c``) and checks as any ``pflux start --config``.
"""

from __future__ import annotations

from pflux.cli import jobopts, options
from pflux.errors import UsageError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import Any

__all__ = ["add_nest_options", "conf_table", "nest_request"]

#: where ``--conf``'s configuration is written in the job, for the broker's ``-c``
CONF_PATH = "{{tmpdir}}/conf.json"


def add_nest_options(parser: options.OptionParser) -> None:
    """The job options, by slots, with ``--broker-opts``, ``--conf`` and ``--uri``."""
    jobopts.add_options(parser, slots=True)
    group = parser.add_argument_group("instance")
    group.add_argument(
        "--broker-opts",
        "--broker-opt",
        dest="broker_opts",
        action="append",
        metavar="OPTS",
        help="options of the instance's broker, comma-separated (-Sstatedir=DIR, -v, ...)",
    )
    group.add_argument(
        "--conf",
        action="append",
        metavar="CONF",
        help="the instance's configuration, updated by each: KEY=VAL (VAL as JSON, else"
        " a string), a .toml or .json file, or TOML or JSON text of several lines",
    )
    group.add_argument("--uri", help="instance URI (default: $PFLUX_URI)")


def nest_request(args: options.Args, command: list[str]) -> jobopts.JobRequest:
    """The request of a job whose one task is ``flux broker [OPTS] COMMAND``, sized by
    ``args``' slots (flux's rule: ``-N`` without ``-n`` is a slot per whole node)."""
    if args.ntasks is None and args.nodes is None:
        raise UsageError("Number of slots to allocate must be specified")
    from pflux.cli.start import check_broker_options

    broker_opts = [opt for value in args.broker_opts or () for opt in value.split(",") if opt]
    check_broker_options(broker_opts)
    conf = conf_table(args.conf) if args.conf else None
    if conf is not None:
        if any(opt.startswith("-c") or opt.startswith("--config") for opt in broker_opts):
            raise UsageError("--conf: the broker options give a configuration file already (-c)")
        broker_opts.append(f"-c{CONF_PATH}")
    args.command = ["flux", "broker", *broker_opts, *command]
    request = jobopts.request_for(args)
    jobspec: dict[str, Any] = request.jobspec
    jobspec["tasks"][0]["count"] = {"total": 1}
    if conf is not None:
        files = jobspec["attributes"]["system"].setdefault("files", {})
        files["conf.json"] = {"mode": 0o100600, "data": conf}
    return request


def conf_table(values: list[str]) -> dict[str, Any]:
    """The configuration ``--conf`` values make, each updating the one before (flux's
    forms: ``KEY=VAL`` with a dotted key, a ``.toml``/``.json`` file, TOML or JSON text);
    UsageError naming a value pflux cannot read."""
    conf: dict[str, Any] = {}
    for value in values:
        _merge(conf, _conf_value(value))
    return conf


def _conf_value(value: str) -> dict[str, Any]:
    import json
    import tomllib

    if "\n" in value:
        try:
            table: Any = json.loads(value) if value.lstrip().startswith("{") else None
            return table if isinstance(table, dict) else tomllib.loads(value)
        except (ValueError, tomllib.TOMLDecodeError) as exc:
            raise UsageError(f"--conf: not JSON or TOML: {exc}") from None
    if value.endswith((".toml", ".json")):
        try:
            with open(value, encoding="utf-8") as file:
                text = file.read()
            table = json.loads(text) if value.endswith(".json") else tomllib.loads(text)
        except OSError as exc:
            raise UsageError(f"--conf={value}: {exc.strerror}") from None
        except (ValueError, tomllib.TOMLDecodeError) as exc:
            raise UsageError(f"--conf={value}: {exc}") from None
        if not isinstance(table, dict):
            raise UsageError(f"--conf={value}: must hold a table")
        return table
    key, equals, text = value.partition("=")
    if not equals or not key or any(not part for part in key.split(".")):
        raise UsageError(
            f"--conf={value}: not KEY=VAL, a .toml or .json file, or TOML or JSON text"
            " (named configurations are not supported by pflux)"
        )
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        parsed = text
    for part in reversed(key.split(".")):
        parsed = {part: parsed}
    result: dict[str, Any] = parsed
    return result


def _merge(into: dict[str, Any], update: dict[str, Any]) -> None:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value
