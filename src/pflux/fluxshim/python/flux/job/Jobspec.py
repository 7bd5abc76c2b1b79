"""RFC 25 jobspecs for tools written against flux-core: ``Jobspec`` and ``JobspecV1``.

The names, signatures, checks and messages are flux-core's
(``flux.job.Jobspec``), so a tool's ``JobspecV1.from_command(...)`` builds the
jobspec flux-core's would. Python 3.8, standard library only, no import of
pflux: it runs in the tools' own interpreters. Nothing costly is imported with
the module (``json``, ``datetime``, ``collections`` and PyYAML are loaded when
first needed), as jobs import it.
"""

from __future__ import annotations

import _collections_abc as abc  # collections.abc's types without loading collections
import errno
import os
import sys

from _pfluxcore import builder

from flux._fsd import parse_fsd

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections import defaultdict
    from collections.abc import Iterable, Iterator, Mapping, Sequence
    from typing import Any, TypeVar

    _JobspecT = TypeVar("_JobspecT", bound="Jobspec")
    _V1T = TypeVar("_V1T", bound="JobspecV1")

__all__ = ["Jobspec", "JobspecV1", "validate_jobspec"]

_INVALID_PROPERTY_CHARS = frozenset("&'\"`|()")


def _convert_jobspec_arg_to_string(jobspec: Any) -> bytes:
    """The encoded jobspec of a ``Jobspec``, a str or bytes (what ``submit`` sends)."""
    if isinstance(jobspec, Jobspec):
        return jobspec.dumps().encode("utf-8", errors="surrogateescape")
    if isinstance(jobspec, str):
        return jobspec.encode("utf-8", errors="surrogateescape")
    if jobspec is None:
        raise OSError(errno.EINVAL, "jobspec must not be None/NULL")
    if not isinstance(jobspec, bytes):
        raise TypeError("jobspec must be a Jobspec or string (either binary or unicode)")
    return jobspec


def _validate_keys(
    expected: Iterable[str],
    given: Iterable[Any],
    keys_optional: bool = False,
    allow_additional: bool = False,
) -> None:
    expected, given = set(expected), set(given)
    if not keys_optional:
        for key in sorted(expected - given):
            raise ValueError(f"Missing key ({key})")
    if not allow_additional:
        for key in sorted(given - expected, key=str):
            raise ValueError(f"Extraneous key ({key})")


# ------------------------------------------------------------ flux.util's helpers


def set_treedict(in_dict: Any, key: str, val: Any) -> None:
    """``set_treedict(d, "a.b.c", 42)`` is ``d["a"]["b"]["c"] = 42``, levels made as needed."""
    head, dot, rest = key.partition(".")
    if dot:
        set_treedict(in_dict.setdefault(head, {}), rest, val)
    else:
        in_dict[key] = val


def del_treedict(in_dict: Any, key: str, remove_empty: bool = False) -> None:
    """``del d["a"]["b"]["c"]`` for ``"a.b.c"``; KeyError if a level is missing.

    With ``remove_empty``, the mappings the deletion leaves empty go too.
    """
    head, dot, rest = key.partition(".")
    if not dot:
        del in_dict[key]
        return
    del_treedict(in_dict[head], rest, remove_empty=remove_empty)
    child = in_dict[head]
    if remove_empty and isinstance(child, abc.Mapping) and len(child) == 0:
        del in_dict[head]


# ------------------------------------------------ RFC 22 idsets, RFC 29 hostlists


def _is_range(text: str) -> bool:
    """Whether ``text`` is ``N`` or ``N-M`` (M >= N), decimal."""
    low, dash, high = text.partition("-")
    if not low.isdigit() or not low.isascii():
        return False
    return not dash or (high.isdigit() and high.isascii() and int(high) >= int(low))


def _decode_idset(text: str) -> None:
    """ValueError unless ``text`` is an RFC 22 idset (``0-3,7``, brackets optional)."""
    inner = text[1:-1] if text.startswith("[") and text.endswith("]") else text
    if inner and not all(_is_range(part) for part in inner.split(",")):
        raise ValueError(f"IDset(): Invalid argument: {text}")


def _decode_hostlist(text: str) -> None:
    """ValueError unless ``text`` is an RFC 29 hostlist (``node[0-3,7]-ib,login``)."""
    hosts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if depth not in (0, 1):
            raise ValueError(f"Invalid hostlist: '{text}'")
        if char == "," and depth == 0:
            hosts.append(text[start:index])
            start = index + 1
    hosts.append(text[start:])
    if depth != 0 or (text and not all(_is_host(host) for host in hosts)):
        raise ValueError(f"Invalid hostlist: '{text}'")


def _is_host(host: str) -> bool:
    """Whether ``host`` is a name, or ``prefix[ranges]suffix`` with one bracket."""
    prefix, bracket, rest = host.partition("[")
    if not bracket:
        return bool(host) and "]" not in host
    ranges, _, suffix = rest.partition("]")
    if "]" in prefix or "[" in suffix or "]" in suffix:
        return False
    return all(_is_range(part) for part in ranges.split(","))


# ----------------------------------------------------- attributes.system checks


def _validate_dependency(dep: Any) -> None:
    _validate_keys(["scheme", "value"], dep.keys(), allow_additional=True)
    if not isinstance(dep["scheme"], str):
        raise TypeError("dependency scheme must be a string")
    if not isinstance(dep["value"], str):
        raise TypeError("dependency value must be a string")


def _validate_range_operator(range_dict: Mapping[str, Any]) -> None:
    operator = range_dict["operator"]
    if not isinstance(operator, str) or len(operator) != 1:
        raise TypeError("operator must be a single character str")
    if operator not in ("+", "*", "^"):
        raise ValueError("operator must be one of ['+', '*', '^']")
    if operator in ("*", "^") and range_dict["operand"] < 2:
        raise ValueError("operand must be > 1 for '*' or '^' operator")
    if operator == "^" and range_dict["min"] < 2:
        raise ValueError("min must be > 1 for '^' operator")


def _validate_task_count(count: Any) -> None:
    if not isinstance(count, abc.Mapping):
        raise TypeError("count must be a mapping")
    if len(count) != 1:
        raise ValueError("count must have exactly one key set")
    if count.keys().isdisjoint({"per_slot", "per_resource", "total"}):
        raise ValueError("count per_slot, per_resource, or total must be set")
    for key in ("total", "per_slot"):
        if key in count:
            if not isinstance(count[key], int):
                raise TypeError(f"count {key} must be an int")
            if count[key] <= 0:
                raise ValueError(f"count {key} must be > 0")


def _validate_constraint_op(operator: Any, args: Any) -> None:
    if not isinstance(operator, str):
        raise TypeError(f"constraint operation {operator} is not a string")
    if not isinstance(args, abc.Sequence):
        raise TypeError(f"argument to constraint {operator} must be a sequence")
    if operator in ("and", "or", "not"):
        for constraint in args:
            _validate_constraint(constraint)
    elif operator == "properties":
        for name in args:
            if any(char in _INVALID_PROPERTY_CHARS for char in name):
                raise TypeError(f"invalid character in property '{name}'")
    elif operator == "hostlist":
        for hosts in args:
            _decode_hostlist(hosts)
    elif operator == "ranks":
        for ranks in args:
            _decode_idset(ranks)
    else:
        raise TypeError(f"unknown constraint operator '{operator}'")


def _validate_constraint(constraints: Any) -> None:
    """An RFC 31 constraint object."""
    if not isinstance(constraints, abc.Mapping):
        raise TypeError("constraints must be a mapping")
    for operator, args in constraints.items():
        _validate_constraint_op(operator, args)


def validate_jobspec(jobspec: Any, require_version: int | None = None) -> Any:
    """``(True, Jobspec)`` for a valid jobspec (a ``Jobspec``, str or bytes of JSON).

    The class is ``JobspecV1`` for ``version: 1`` or ``require_version=1``;
    an invalid jobspec raises the constructor's ValueError or TypeError.
    """
    import json

    obj = json.loads(_convert_jobspec_arg_to_string(jobspec))
    if obj is None:
        return (1, "Unable to parse JSON")
    _validate_keys(Jobspec.top_level_keys, obj.keys())
    if require_version == 1 or obj.get("version", 0) == 1:
        return True, JobspecV1(**obj)
    return True, Jobspec(**obj)


def validate_counts(resources: Sequence[Any]) -> None:
    """ValueError unless every count in ``resources`` (and below) is an integer."""
    for resource in resources:
        count = resource["count"]
        if not isinstance(count, int):
            raise ValueError(
                f"resource count must be an integer for type '{resource['type']}'"
                f" (got '{type(count).__name__}')"
            )
        validate_counts(resource.get("with", []))


def _io_path(path: Any) -> str:
    """A stdio file's path as a string (a path-like object's too), else TypeError."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str):
        raise TypeError(f"The path must be a string or pathlib object, got {type(path).__name__}")
    return path


def _attr_key_prepend(key: str) -> str:
    """``attributes.`` and, unless the key is ``user.`` or ``system.``, ``system.`` before it."""
    if key.startswith("attributes."):
        return key
    if key.startswith(("user.", "system.")):
        return "attributes." + key
    return "attributes.system." + key


def _load_document(stream: Any) -> Any:
    """A YAML (PyYAML, if installed) or JSON document from a str, bytes or file object."""
    try:
        # PyYAML's type stubs may be absent where its code is present
        import yaml  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        text = stream.read() if hasattr(stream, "read") else stream
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        if not isinstance(text, str):
            raise TypeError("a jobspec stream must be a str, bytes or file object") from None
        if not text.lstrip().startswith(("{", "[")):
            raise ImportError(
                "reading a YAML jobspec needs PyYAML, which is not installed"
                " (a JSON jobspec is read without it)",
                name="yaml",
            ) from None
        import json

        return json.loads(text)
    return yaml.safe_load(stream)


# ------------------------------------------------------------------------- Jobspec


class Jobspec:
    """A canonical jobspec (RFC 14), checked as it is made: TypeError or ValueError."""

    top_level_keys = frozenset(("resources", "tasks", "version", "attributes"))

    def __init__(self, resources: Any, tasks: Any, attributes: Any, version: Any) -> None:
        if not isinstance(resources, abc.Sequence):
            raise TypeError("resources must be a sequence")
        if not isinstance(tasks, abc.Sequence):
            raise TypeError("tasks must be a sequence")
        if not isinstance(attributes, abc.Mapping):
            raise TypeError("attributes must be a mapping")
        if not isinstance(version, int):
            raise TypeError("version must be an integer")
        if version < 1:
            raise ValueError("version must be >= 1")
        self.jobspec: dict[str, Any] = {
            "resources": resources,
            "tasks": tasks,
            "attributes": attributes,
            "version": version,
        }
        for resource in self:
            self._validate_resource(resource)
        for task in tasks:
            self._validate_task(task)
        _validate_keys(["system", "user"], attributes.keys(), keys_optional=True)
        if "system" in attributes:
            self._validate_system_attributes(attributes["system"])

    @classmethod
    def from_yaml_stream(cls: type[_JobspecT], yaml_stream: Any) -> _JobspecT:
        """A jobspec from YAML or JSON: a str, bytes or file object (YAML needs PyYAML)."""
        jobspec = _load_document(yaml_stream)
        if not isinstance(jobspec, abc.Mapping):
            raise TypeError("jobspec must be a mapping")
        _validate_keys(cls.top_level_keys, jobspec.keys())
        return cls(**jobspec)

    @classmethod
    def from_yaml_file(cls: type[_JobspecT], filename: str | os.PathLike[str]) -> _JobspecT:
        """A jobspec from a YAML or JSON file."""
        with open(filename, "rb") as infile:
            return cls.from_yaml_stream(infile)

    # ----------------------------------------------------------------- checks

    @staticmethod
    def _validate_complex_range(range_dict: Mapping[str, Any]) -> None:
        if "min" not in range_dict:
            raise ValueError("min must be in range")
        _validate_keys(["min", "max", "operand", "operator"], range_dict.keys(), True)
        for key in ("min", "max", "operand"):
            if key not in range_dict:
                continue
            if not isinstance(range_dict[key], int):
                raise TypeError(f"{key} must be an int")
            if range_dict[key] < 1:
                raise ValueError(f"{key} must be > 0")
        if "max" in range_dict and range_dict["max"] < range_dict["min"]:
            raise ValueError("max must be >= min")
        if ("operand" in range_dict) != ("operator" in range_dict):
            raise ValueError("operand and operator must both be in range if either is")
        if "operator" in range_dict:
            _validate_range_operator(range_dict)

    @classmethod
    def _validate_count_string(cls, count: str) -> None:
        """An idset (``2,4``), or a range ``MIN+`` or ``MIN-MAX[:OPERAND[:OPERATOR]]``."""
        try:
            _decode_idset(count)
            return
        except ValueError:
            pass
        values = count.split(":")
        if len(values) > 3 or ("-" not in values[0] and "+" not in values[0]):
            raise ValueError("count string must be a valid idset or range")
        range_dict: dict[str, Any] = {}
        if "-" in values[0]:
            low, _, high = values[0].partition("-")
            range_dict["max"] = int(high)
        else:
            low = values[0].rstrip("+")
        range_dict["min"] = int(low)
        if len(values) > 1:
            range_dict["operand"] = int(values[1])
            range_dict["operator"] = "+"
        if len(values) > 2:
            range_dict["operator"] = values[2]
        cls._validate_complex_range(range_dict)

    @classmethod
    def _validate_resource(cls, res: Any) -> None:
        if not isinstance(res, abc.Mapping):
            raise TypeError("resource must be a mapping")
        if "type" not in res:
            raise ValueError("type is a required key for resources")
        if not isinstance(res["type"], str):
            raise TypeError("type must be a string")
        if "count" not in res:
            raise ValueError("count is a required key for resources")
        cls._validate_resource_count(res["type"], res["count"])
        for key in ("id", "unit", "label"):
            if key in res and not isinstance(res[key], str):
                raise TypeError(f"{key} must be a string")
        if "exclusive" in res and res["exclusive"] not in (True, False):
            raise TypeError("exclusive must be a boolean")
        children = res.get("with", [])
        if not isinstance(children, abc.Sequence) or isinstance(children, str):
            raise TypeError("with must be a sequence")
        if res["type"] == "slot" and "label" not in res:
            raise ValueError("slots must have labels")

    @classmethod
    def _validate_resource_count(cls, res_type: str, count: Any) -> None:
        if isinstance(count, abc.Mapping):
            cls._validate_complex_range(count)
        elif isinstance(count, str):
            cls._validate_count_string(count)
        elif not isinstance(count, int):
            raise TypeError("count must be an int or mapping")
        else:  # other types than these may count 0
            if res_type in ("node", "slot", "core") and count < 1:
                raise ValueError("node, slot, or core count must be > 0")
            if count < 0:
                raise ValueError("count must be >= 0")

    @staticmethod
    def _validate_task(task: Any) -> None:
        if not isinstance(task, abc.Mapping):
            raise TypeError("task must be a mapping")
        _validate_keys(["command", "slot", "count"], task.keys(), allow_additional=True)
        _validate_task_count(task["count"])
        if not isinstance(task["slot"], str):
            raise TypeError("slot must be a string")
        if "attributes" in task and not isinstance(task["attributes"], abc.Mapping):
            raise TypeError("attributes must be a mapping")
        command = task["command"]
        if not isinstance(command, abc.Sized):
            raise TypeError("command must be a list of strings")
        if len(command) == 0:
            raise TypeError("command array cannot have length of zero")
        if (
            not isinstance(command, abc.Sequence)
            or isinstance(command, str)
            or not all(isinstance(arg, str) for arg in command)
        ):
            raise TypeError("command must be a list of strings")

    @staticmethod
    def _validate_system_attributes(system: Any) -> None:
        if "dependencies" in system:
            if not isinstance(system["dependencies"], abc.Sequence):
                raise TypeError("attributes.system.dependencies must be a list")
            for dependency in system["dependencies"]:
                _validate_dependency(dependency)
        if "constraints" in system:
            _validate_constraint(system["constraints"])

    # ------------------------------------------------------------- properties

    def _system(self, key: str) -> Any:
        try:
            return self.jobspec["attributes"]["system"][key]
        except KeyError:
            return None

    @property
    def duration(self) -> Any:
        """The time limit in seconds (0: none), or None if unset.

        Set it to seconds (int or float), an RFC 23 duration string or a
        ``datetime.timedelta``; it is kept as a float.
        """
        return self._system("duration")

    @duration.setter
    def duration(self, duration: Any) -> None:
        datetime = sys.modules.get("datetime")  # a timedelta means it is loaded
        if isinstance(duration, str):
            time = parse_fsd(duration)
        elif datetime is not None and isinstance(duration, datetime.timedelta):
            time = duration.total_seconds()
        elif isinstance(duration, (float, int)):
            time = float(duration)
        else:
            raise TypeError("duration must be an int, float, string, or timedelta")
        if time < 0:
            raise ValueError("duration must not be negative")
        if not time < float("inf"):  # also NaN
            raise ValueError("duration must be a normal, finite value")
        self.setattr("system.duration", time)

    @property
    def queue(self) -> Any:
        """The queue the job is submitted to, or None."""
        return self._system("queue")

    @queue.setter
    def queue(self, queue: Any) -> None:
        if not isinstance(queue, str):
            raise TypeError("queue must be a string")
        self.setattr("system.queue", queue)

    @property
    def cwd(self) -> Any:
        """The job's working directory (a str or path-like when set), or None."""
        return self._system("cwd")

    @cwd.setter
    def cwd(self, cwd: Any) -> None:
        if isinstance(cwd, os.PathLike):
            cwd = os.fspath(cwd)
        if not isinstance(cwd, str):
            raise ValueError("cwd must be a string")
        self.setattr("system.cwd", cwd)

    @property
    def environment(self) -> Any:
        """The job's whole environment, a mapping (kept, not copied), or None."""
        return self._system("environment")

    @environment.setter
    def environment(self, environ: Any) -> None:
        if not isinstance(environ, abc.Mapping):
            raise ValueError("environment must be a mapping")
        self.setattr("system.environment", environ)

    def _get_io_path(self, iotype: str, stream_name: str) -> Any:
        try:
            options = self.jobspec["attributes"]["system"]["shell"]["options"]
            return options[iotype][stream_name]["path"]
        except KeyError:
            return None

    def _set_io_path(self, iotype: str, stream_name: str, path: Any) -> None:
        path = _io_path(path)
        self.setattr_shell_option(f"{iotype}.{stream_name}.type", "file")
        self.setattr_shell_option(f"{iotype}.{stream_name}.path", path)

    @property
    def input(self) -> Any:
        """The file stdin is read from (a str or path-like when set), or None."""
        return self._get_io_path("input", "stdin")

    @input.setter
    def input(self, path: Any) -> None:
        self._set_io_path("input", "stdin", path)

    @property
    def output(self) -> Any:
        """The file stdout goes to (stderr too unless set), or None."""
        return self._get_io_path("output", "stdout")

    @output.setter
    def output(self, path: Any) -> None:
        self._set_io_path("output", "stdout", path)

    @property
    def error(self) -> Any:
        """The file stderr goes to, or None."""
        return self._get_io_path("output", "stderr")

    @error.setter
    def error(self, path: Any) -> None:
        self._set_io_path("output", "stderr", path)

    stdin = input
    stdout = output
    stderr = error

    @property
    def unbuffered(self) -> bool:
        """Whether stdout and stderr are unbuffered (True sets a 50 ms output batch)."""
        try:
            stdout = self.getattr("shell.options.output.stdout.buffer.type")
            stderr = self.getattr("shell.options.output.stderr.buffer.type")
        except KeyError:
            return False
        return bool(stdout == "none" and stderr == "none")

    @unbuffered.setter
    def unbuffered(self, value: Any) -> None:
        if not isinstance(value, bool):
            raise TypeError("unbuffered must be True or False")
        if value:
            for key, option in builder.UNBUFFERED:
                self.setattr_shell_option(key, option)
            return
        options = "system.shell.options."
        try:  # the batch timeouts go only where they are still what True set
            del_treedict(self.attributes, options + "output.stdout.buffer", remove_empty=True)
            del_treedict(self.attributes, options + "output.stderr.buffer", remove_empty=True)
            if self.getattr("shell.options.output.batch-timeout") == 0.05:
                del_treedict(self.attributes, options + "output.batch-timeout", True)
            if self.getattr("shell.options.input.batch-timeout") == 0.0:
                del_treedict(self.attributes, options + "input.batch-timeout", True)
        except KeyError:
            pass  # already gone

    def add_file(
        self, path: str, data: Any, perms: int | None = None, encoding: str | None = None
    ) -> None:
        """Put a file in ``attributes.system.files`` (RFC 37) as ``path``.

        ``data`` is the content when it holds a newline or ``encoding`` is
        given, a mapping (kept as JSON), or else the path of a local file to
        read (whose mode is kept). ``perms`` defaults to 0o600.
        """
        from flux._fileref import fileref  # a job adds files seldom

        if not isinstance(data, (abc.Mapping, str)):
            raise TypeError("data must be a Mapping or string")
        if perms is None:
            perms = 0o600
        system = self.jobspec["attributes"]["system"]
        files = system.get("files", {})
        if encoding is None and "\n" in data:
            encoding = "utf-8"
        files[path] = fileref(data, perms, encoding)
        system["files"] = files

    def getattr(self, key: str) -> Any:
        """The attribute at dotted ``key`` (``system.`` implied); KeyError if there is none."""
        value: Any = self.jobspec
        for part in _attr_key_prepend(key).split("."):
            value = value.get(part)
            if value is None:
                raise KeyError(key)
        return value

    def setattr(self, key: str, val: Any) -> None:
        """Set the attribute at dotted ``key`` (``system.`` implied), making levels as needed."""
        key = _attr_key_prepend(key)
        try:
            set_treedict(self.jobspec, key, val)
        except TypeError as exc:
            raise TypeError(f"failed to set {key} to {val}: {exc}") from None

    def setattr_shell_option(self, key: str, val: Any) -> None:
        """Set the job shell's option ``key`` (``attributes.system.shell.options.KEY``)."""
        self.setattr("system.shell.options." + key, val)

    def dumps(self, **kwargs: Any) -> str:
        """The jobspec as JSON (``json.dumps`` keywords pass through)."""
        import json

        return json.dumps(self.jobspec, ensure_ascii=False, **kwargs)

    @property
    def resources(self) -> Any:
        """The ``resources`` section."""
        return self.jobspec.get("resources", None)

    @property
    def tasks(self) -> Any:
        """The ``tasks`` section."""
        return self.jobspec.get("tasks", None)

    @property
    def attributes(self) -> Any:
        """The ``attributes`` section."""
        return self.jobspec.get("attributes", None)

    @property
    def version(self) -> Any:
        """The jobspec's version."""
        return self.jobspec.get("version", None)

    def __iter__(self) -> Iterator[Any]:
        """The resources, depth first, each before what it holds (``with``)."""

        def walk(resources: Iterable[Any]) -> Iterator[Any]:
            for resource in resources:
                yield resource
                yield from walk(resource.get("with", []))

        return walk(self.resources)

    def resource_walk(self) -> Iterator[tuple[Any, Any, Any]]:
        """``(parent, resource, count)`` depth first; ``count`` is multiplied down the tree.

        ``parent`` is None at the top: a slot of count 2 with 4 cores yields
        the slot with 2, then the core with 8.
        """

        def walk(resources: Iterable[Any], parent: Any, count: Any) -> Iterator[Any]:
            for resource in resources:
                total = count * resource["count"]
                yield parent, resource, total
                yield from walk(resource.get("with", []), resource, total)

        return walk(self.resources, None, 1)

    def resource_counts(self) -> defaultdict[str, Any]:
        """How many of each resource type the jobspec asks for in all (``unit`` ignored)."""
        from collections import defaultdict

        counts: defaultdict[str, Any] = defaultdict(int)
        for _, resource, count in self.resource_walk():
            counts[resource["type"]] += count
        return counts

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.resources}, {self.tasks}, "
            f"attributes={self.attributes}, version={self.version})"
        )

    def __str__(self) -> str:
        return str(self.jobspec)


# ----------------------------------------------------------------------- JobspecV1


class JobspecV1(Jobspec):
    """A version 1 jobspec (RFC 25): a duration, and integer counts of known shapes."""

    def __init__(self, resources: Any, tasks: Any, attributes: Any, version: Any = 1) -> None:
        if version != 1:
            raise ValueError("version must be 1")
        super().__init__(resources, tasks, attributes, version)
        if "system" not in attributes:
            raise ValueError("attributes.system is a required key")
        system = attributes["system"]
        if not isinstance(system, abc.Mapping):
            raise ValueError("attributes.system must be a mapping")
        if "duration" not in system:
            raise ValueError("attributes.system.duration is a required key")
        import numbers

        if not isinstance(system["duration"], numbers.Number):
            raise ValueError("attributes.system.duration must be a number")
        for task in tasks:
            if task["count"].keys().isdisjoint({"per_slot", "total"}):
                raise ValueError("count per_slot or total must be set")
        validate_counts(resources)

    def _set_extra_options(
        self: _V1T,
        *,
        duration: Any = None,
        environment: Any = None,
        env_expand: Any = None,
        cwd: Any = None,
        rlimits: Any = None,
        name: Any = None,
        input: Any = None,
        output: Any = None,
        error: Any = None,
        label_io: bool = False,
        unbuffered: bool = False,
        queue: Any = None,
        bank: Any = None,
    ) -> _V1T:
        """The factories' common keywords applied; the environment is os.environ's unless given."""
        if duration is not None:
            self.duration = duration
        self.environment = dict(os.environ) if environment is None else environment
        if env_expand is not None:
            if not isinstance(env_expand, abc.Mapping):
                raise ValueError("env_expand must be a mapping")
            self.setattr_shell_option("env-expand", env_expand)
        if cwd is not None:
            self.cwd = cwd
        if rlimits is not None:
            if not isinstance(rlimits, abc.Mapping):
                raise ValueError("rlimits must be a mapping")
            self.setattr_shell_option("rlimit", rlimits)
        if name is not None:
            self.setattr("job.name", name)
        self._set_stdio(input, output, error, label_io)
        if unbuffered:
            self.unbuffered = True
        if queue is not None:
            self.setattr("queue", queue)
        if bank is not None:
            self.setattr("bank", bank)
        return self

    def _set_stdio(self, input: Any, output: Any, error: Any, label_io: bool) -> None:
        """Files for stdin, stdout and stderr (``kvs`` and ``none`` leave the default)."""
        stdin, stdout, stderr = (None if p is None else _io_path(p) for p in (input, output, error))
        for key, value in builder.stdio_options(stdin, stdout, stderr, label_io):
            self.setattr_shell_option(key, value)

    @classmethod
    def per_resource(
        cls: type[_V1T],
        command: Sequence[str],
        ncores: int | None = None,
        nnodes: int | None = None,
        per_resource_type: str | None = None,
        per_resource_count: int | None = None,
        gpus_per_node: int | None = None,
        exclusive: bool = False,
        **kwargs: Any,
    ) -> _V1T:
        """A jobspec for cores or nodes, with a number of tasks per node or per core.

        ``per_resource_type`` (node or core) and ``per_resource_count`` go
        together; ``gpus_per_node`` and ``exclusive`` need ``nnodes``; the other
        keywords are ``from_command``'s.
        """
        per_resource = _per_resource_option(per_resource_type, per_resource_count)
        if ncores is not None and (not isinstance(ncores, int) or ncores < 1):
            raise ValueError("ncores must be an integer >= 1")
        if gpus_per_node is not None:
            if not isinstance(gpus_per_node, int) or gpus_per_node < 0:
                raise ValueError("gpus_per_node must be an integer >= 0")
            if not nnodes:
                raise ValueError("gpus_per_node must be specified with nnodes")
        if nnodes is not None:
            if not isinstance(nnodes, int) or nnodes < 1:
                raise ValueError("nnodes must be an integer >= 1")
        elif exclusive:
            raise ValueError("exclusive can only be set with a node count")
        top = builder.per_resource_resources(ncores, nnodes, gpus_per_node, exclusive)
        tasks = [{"command": command, "slot": "task", "count": {"per_slot": 1}}]
        attributes: dict[str, Any] = {"system": {"duration": 0}}
        if per_resource:
            set_treedict(attributes, "system.shell.options.per-resource", per_resource)
        return cls([top], tasks, attributes=attributes)._set_extra_options(**kwargs)

    @classmethod
    def from_command(
        cls: type[_V1T],
        command: Sequence[str],
        num_tasks: int = 1,
        cores_per_task: int = 1,
        gpus_per_task: int | None = None,
        num_nodes: int | None = None,
        exclusive: bool = False,
        duration: Any = None,
        environment: Mapping[str, str] | None = None,
        env_expand: Mapping[str, str] | None = None,
        cwd: Any = None,
        rlimits: Mapping[str, int] | None = None,
        name: str | None = None,
        input: Any = None,
        output: Any = None,
        error: Any = None,
        label_io: bool = False,
        unbuffered: bool = False,
        queue: str | None = None,
        bank: str | None = None,
    ) -> _V1T:
        """The smallest version 1 jobspec that runs ``command``.

        ``num_tasks`` tasks of ``cores_per_task`` cores (and ``gpus_per_task``
        GPUs), spread over ``num_nodes`` nodes if given (``exclusive``: whole
        nodes). ``duration`` is seconds, an RFC 23 string or a timedelta
        (unset: no limit); ``environment`` defaults to ``os.environ``;
        ``output``/``error`` name files (``kvs`` and ``none`` leave the default).
        """
        if not isinstance(num_tasks, int) or num_tasks < 1:
            raise ValueError("task count must be a integer >= 1")
        if not isinstance(cores_per_task, int) or cores_per_task < 1:
            raise ValueError("cores per task must be an integer >= 1")
        if gpus_per_task is not None and (not isinstance(gpus_per_task, int) or gpus_per_task < 0):
            raise ValueError("gpus per task must be an integer >= 0")
        if num_nodes is not None and (not isinstance(num_nodes, int) or num_nodes < 1):
            raise ValueError("node count must be an integer >= 1 (if set)")
        top, task_count = builder.task_resources(
            num_tasks, cores_per_task, gpus_per_task, num_nodes, exclusive
        )
        tasks = [{"command": command, "slot": "task", "count": task_count}]
        return cls([top], tasks, attributes={"system": {"duration": 0}})._set_extra_options(
            duration=duration,
            environment=environment,
            env_expand=env_expand,
            cwd=cwd,
            rlimits=rlimits,
            name=name,
            input=input,
            output=output,
            error=error,
            label_io=label_io,
            unbuffered=unbuffered,
            queue=queue,
            bank=bank,
        )

    @classmethod
    def from_submit(
        cls: type[_V1T],
        command: Sequence[str],
        *,
        ntasks: int = 1,
        nodes: int | None = None,
        cores_per_task: int = 1,
        gpus_per_task: int | None = None,
        exclusive: bool = False,
        name: str | None = None,
        queue: str | None = None,
        bank: str | None = None,
        cwd: Any = None,
        output: Any = None,
        error: Any = None,
        input: Any = None,
        label_io: bool = False,
        unbuffered: bool = False,
        **kwargs: Any,
    ) -> _V1T:
        """The jobspec ``flux submit`` builds for ``command``: ``from_command`` then
        ``apply_options`` (the other keywords: ``env``, ``rlimit``, ``time_limit``,
        ``dependency``...), the submitter's environment and limits passed on."""
        jobspec = cls.from_command(
            command,
            num_tasks=ntasks,
            cores_per_task=cores_per_task,
            gpus_per_task=gpus_per_task,
            num_nodes=nodes,
            exclusive=exclusive,
            name=name,
            queue=queue,
            bank=bank,
            cwd=cwd,
            output=output,
            error=error,
            input=input,
            label_io=label_io,
            unbuffered=unbuffered,
        )
        env = kwargs.pop("env", [])
        rlimit = kwargs.pop("rlimit", [])
        return jobspec.apply_options(prog="submit", env=env, rlimit=rlimit, **kwargs)

    @classmethod
    def from_alloc(
        cls: type[_V1T],
        *,
        nslots: int | None = None,
        nodes: int | None = None,
        cores_per_slot: int = 1,
        gpus_per_slot: int | None = None,
        exclusive: bool = False,
        broker_opts: Iterable[str] | None = None,
        conf: Any = None,
        bg: bool = False,
        name: str | None = None,
        queue: str | None = None,
        bank: str | None = None,
        cwd: Any = None,
        output: Any = None,
        error: Any = None,
        input: Any = None,
        label_io: bool = False,
        unbuffered: bool = False,
        **kwargs: Any,
    ) -> _V1T:
        """The jobspec ``flux alloc`` builds: a nested instance (``from_nest_command``)
        of ``nslots`` slots (or ``nodes`` whole nodes), in this directory, then
        ``apply_options``. ``bg`` (``alloc --bg``) builds the same jobspec: pflux's
        nested broker with no command and no terminal serves without an initial
        program, which flux's ``-Sbroker.rc2_none=1`` asks of flux's."""
        del bg
        if nslots is None:
            if nodes is None:
                raise ValueError("from_alloc() requires nslots or nodes")
            nslots, exclusive = nodes, True
        jobspec = cls.from_nest_command(
            [],
            num_slots=nslots,
            cores_per_slot=cores_per_slot,
            gpus_per_slot=gpus_per_slot,
            num_nodes=nodes,
            broker_opts=broker_opts,
            exclusive=exclusive,
            conf=conf,
            name=name,
            queue=queue,
            bank=bank,
            cwd=os.getcwd() if cwd is None else cwd,
            output=output,
            error=error,
            input=input,
            label_io=label_io,
            unbuffered=unbuffered,
        )
        env = kwargs.pop("env", [])
        rlimit = kwargs.pop("rlimit", [])
        return jobspec.apply_options(prog="alloc", env=env, rlimit=rlimit, **kwargs)

    @classmethod
    def from_batch(
        cls: type[_V1T],
        script: str | os.PathLike[str] | None = None,
        *,
        content: str | None = None,
        nslots: int | None = None,
        nodes: int | None = None,
        cores_per_slot: int = 1,
        gpus_per_slot: int | None = None,
        exclusive: bool = False,
        broker_opts: Iterable[str] | None = None,
        conf: Any = None,
        wrap: bool = False,
        name: str | None = None,
        queue: str | None = None,
        bank: str | None = None,
        cwd: Any = None,
        output: Any = None,
        error: Any = None,
        input: Any = None,
        label_io: bool = False,
        unbuffered: bool = False,
        **kwargs: Any,
    ) -> _V1T:
        """The jobspec ``flux batch`` builds for a script file (``script``, the job
        named after it) or its text (``content``, named ``batch``): one slot unless
        ``nslots`` or ``nodes``, this directory, output to ``flux-{{id}}.out``,
        ``wrap`` adding ``#!/bin/sh`` to a script without one; then ``apply_options``."""
        if script is not None and content is not None:
            raise TypeError("from_batch() accepts 'script' or 'content', not both")
        if script is None:
            if content is None:
                raise TypeError(
                    "from_batch() requires 'script' (file path) or 'content' (inline script)"
                )
            text = content
        else:
            if name is None:
                name = os.path.basename(os.fspath(script))
            with open(script, encoding="utf-8") as file:
                text = file.read()
        if wrap and not text.startswith("#!"):
            text = "#!/bin/sh\n" + text
        if nslots is None:
            nslots, exclusive = (nodes, True) if nodes is not None else (1, exclusive)
        jobspec = cls.from_batch_command(
            script=text,
            jobname="batch" if name is None else name,
            num_slots=nslots,
            cores_per_slot=cores_per_slot,
            gpus_per_slot=gpus_per_slot,
            num_nodes=nodes,
            broker_opts=broker_opts,
            exclusive=exclusive,
            conf=conf,
            cwd=os.getcwd() if cwd is None else cwd,
            output="flux-{{id}}.out" if output is None else output,
            error=error,
            input=input,
            label_io=label_io,
            unbuffered=unbuffered,
            queue=queue,
            bank=bank,
        )
        env = kwargs.pop("env", [])
        rlimit = kwargs.pop("rlimit", [])
        return jobspec.apply_options(prog="batch", env=env, rlimit=rlimit, **kwargs)

    def apply_options(
        self: _V1T,
        args: Any = None,
        *,
        prog: str | None = None,
        env: Any = None,
        rlimit: Any = None,
        signal: str | None = None,
        taskmap: str | None = None,
        dependency: Any = None,
        requires: Any = None,
        shell_options: Mapping[str, Any] | None = None,
        time_limit: Any = None,
        attributes: Mapping[str, Any] | None = None,
        add_file: Any = None,
        **kwargs: Any,
    ) -> _V1T:
        """Apply ``flux submit``'s options in place (and return the jobspec): ``env`` and
        ``rlimit`` rules (applied only when given, ``[]`` passing everything on),
        ``signal`` (``[SIG][@TIME]``), ``taskmap``, ``dependency`` URIs,
        ``shell_options`` and ``attributes`` dicts (a bare key is ``system.``'s, a
        leading ``.`` the attributes' root), ``time_limit``. ``args`` (a namespace) gives
        values the keywords do not; ``prog`` names the command, whose plugins pflux
        does not have. ``requires`` (RFC 35 queries, joined by AND) sets
        ``system.constraints``; ``add_file`` (``[NAME=]ARG`` each) adds files."""
        from flux.job import _submitopts

        if kwargs:  # flux-core takes only its CLI plugins' options here: pflux has none
            unknown = ", ".join(repr(key) for key in sorted(kwargs))
            raise TypeError(f"apply_options() got unexpected keyword argument(s): {unknown}")
        given = {
            "env": env,
            "rlimit": rlimit,
            "signal": signal,
            "taskmap": taskmap,
            "dependency": dependency,
            "requires": requires,
            "shell_options": shell_options,
            "time_limit": time_limit,
            "attributes": attributes,
            "add_file": add_file,
        }
        base = {key: getattr(args, key, None) for key in given} if args is not None else {}
        options = {**base, **{key: val for key, val in given.items() if val is not None}}
        env_set = env is not None or args is not None
        rlimit_set = rlimit is not None or args is not None
        _submitopts.apply(self, options, env_set=env_set, rlimit_set=rlimit_set)
        return self

    @classmethod
    def from_batch_command(
        cls: type[_V1T],
        script: str,
        jobname: str,
        args: Iterable[str] | None = None,
        num_slots: int = 1,
        cores_per_slot: int = 1,
        gpus_per_slot: int | None = None,
        num_nodes: int | None = None,
        broker_opts: Iterable[str] | None = None,
        exclusive: bool = False,
        conf: Any = None,
        **kwargs: Any,
    ) -> _V1T:
        """A nested instance whose initial program is ``script`` (its text, ``#!`` first).

        The script travels in the jobspec (``attributes.system.files.script``,
        mode 0700) and runs as ``{{tmpdir}}/script ARGS``; the rest is
        ``from_nest_command``'s.
        """
        if not script.startswith("#!"):
            raise ValueError(f"{jobname} does not appear to start with '#!'")
        jobspec = cls.from_nest_command(
            ["{{tmpdir}}/script", *(args or ())],
            num_slots=num_slots,
            cores_per_slot=cores_per_slot,
            gpus_per_slot=gpus_per_slot,
            num_nodes=num_nodes,
            broker_opts=broker_opts,
            exclusive=exclusive,
            conf=conf,
            name=jobname,
            **kwargs,
        )
        jobspec.add_file("script", script, perms=0o700, encoding="utf-8")
        return jobspec

    @classmethod
    def from_nest_command(
        cls: type[_V1T],
        command: Sequence[str],
        num_slots: int = 1,
        cores_per_slot: int = 1,
        gpus_per_slot: int | None = None,
        num_nodes: int | None = None,
        broker_opts: Iterable[str] | None = None,
        exclusive: bool = False,
        conf: Any = None,
        **kwargs: Any,
    ) -> _V1T:
        """A nested instance (``flux broker [OPTS] COMMAND``), one broker per node.

        ``num_slots`` slots of ``cores_per_slot`` cores (and ``gpus_per_slot``
        GPUs) size it; ``conf``, if given, is its configuration (a mapping, a
        ``BatchConfig``, or what ``BatchConfig.update`` reads: KEY=VAL, JSON or TOML
        text, a file; ``attributes.system.files["conf.json"]``, passed as ``-c``); the
        other keywords are ``from_command``'s.
        """
        opts = list(broker_opts) if broker_opts is not None else []
        if conf is not None:
            from flux.job._utils import normalize_conf

            conf = normalize_conf(conf)
            opts.append("-c{{tmpdir}}/conf.json")
        jobspec = cls.from_command(
            ["flux", "broker", *opts, *command],
            num_tasks=num_slots,
            cores_per_task=cores_per_slot,
            gpus_per_task=gpus_per_slot,
            num_nodes=num_nodes,
            exclusive=exclusive,
            **kwargs,
        )
        jobspec.setattr_shell_option("per-resource.type", "node")
        jobspec.setattr_shell_option("mpi", "none")
        jobspec.setattr_shell_option("exit-timeout", "none")
        if conf is not None:
            jobspec.add_file("conf.json", conf)
        return jobspec


def _per_resource_option(res_type: Any, count: Any) -> dict[str, Any] | None:
    """``per_resource``'s shell option from its type and count: both or neither."""
    if res_type is not None and count is not None and not isinstance(res_type, str):
        raise ValueError("per_resource_type must be a string")
    option = builder.per_resource_option(res_type, count)
    if option is not None:
        if not isinstance(count, int):
            raise ValueError("per_resource_count must be an integer")
        if count < 1:
            raise ValueError("per_resource_count must be >= 1")
    return option
