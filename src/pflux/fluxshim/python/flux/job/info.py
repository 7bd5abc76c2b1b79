"""``flux.job.JobInfo``: a job as job-list (or ``result()``) describes it.

Attributes come from the response (``id``, ``userid``, ``urgency``, ``priority``,
``t_submit``... ``t_inactive``, ``name``, ``ntasks``, ``nnodes``, ``nodelist``,
``waitstatus``...) or are worked out as flux-core's are: ``state`` and ``result``
as names (``RUN``, ``COMPLETED``), ``returncode``, ``runtime``, ``status``,
``username``, ``exception`` (``occurred``, ``severity``, ``type``, ``note``),
``annotations`` (and its ``sched`` and ``user``) read as attributes,
``contextual_info``, ``contextual_time``, ``inactive_reason`` and the emoji forms.

As in flux-core, each value of the response is kept as the attribute named with a
leading underscore (``_nnodes``, ``_state_id``, ``_exception``...), which tools
read, and each worked-out value is kept so once first asked for (``_runtime``).
"""

from __future__ import annotations

import json
from functools import wraps
from itertools import chain

from _pfluxcore import jobinfo as _jobinfo

from flux.constants import FLUX_JOB_RESULT_CANCELED, FLUX_JOB_RESULT_FAILED
from flux.job.JobID import JobID

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable, ClassVar, Iterable, TypeVar

    _T = TypeVar("_T")

_STATES = {
    1: ("NEW", "N"),
    2: ("DEPEND", "D"),
    4: ("PRIORITY", "P"),
    8: ("SCHED", "S"),
    16: ("RUN", "R"),
    32: ("CLEANUP", "C"),
    64: ("INACTIVE", "I"),
}
_RESULTS = {1: ("COMPLETED", "CD"), 2: ("FAILED", "F"), 4: ("CANCELED", "CA"), 8: ("TIMEOUT", "TO")}


def statetostr(stateid: int, fmt: str = "L") -> str:
    """A state's name: ``L`` long (``RUN``), ``S`` one letter; lower case for ``l``, ``s``."""
    long, short = _STATES.get(stateid, ("(unknown)", "?"))
    name = short if fmt in ("S", "s") else long
    return name.lower() if fmt in ("l", "s") else name


def resulttostr(resultid: Any, fmt: str = "L") -> str:
    """A result's name (``COMPLETED``, ``CD``...); "" for no result."""
    if resultid == "":
        return ""
    long, short = _RESULTS.get(resultid, ("(unknown)", "?"))
    name = short if fmt in ("S", "s") else long
    return name.lower() if fmt in ("l", "s") else name


_PENDING_OR_RUNNING = 2 | 4 | 8 | 16 | 32


def statetoemoji(stateid: int) -> str:
    """The state's symbol, or its letter where stdout cannot show it."""
    letter = statetostr(stateid, "S")
    return _jobinfo.printable(_jobinfo.STATE_EMOJI.get(letter, letter), letter)


def resulttoemoji(resultid: Any) -> str:
    """The result's symbol (an ideographic space for none), or a text face."""
    abbrev = resulttostr(resultid, "S")
    return _jobinfo.printable(*_jobinfo.RESULT_EMOJI.get(abbrev, ("?", "?")))


def statustostr(stateid: int, resultid: Any, fmt: str = "L") -> str:
    """The state while the job is active, its result once inactive."""
    if stateid & _PENDING_OR_RUNNING:
        return statetostr(stateid, fmt)
    return resulttostr(resultid, fmt)


def statustoemoji(stateid: int, resultid: Any) -> str:
    if stateid & _PENDING_OR_RUNNING:
        return statetoemoji(stateid)
    return resulttoemoji(resultid)


def get_username(userid: int) -> str:
    """The user's name, or the id as text when the password database has none."""
    import pwd

    try:
        return pwd.getpwuid(userid).pw_name
    except KeyError:
        return str(userid)


def memoized_property(fget: Callable[[Any], _T]) -> property:
    """A property computed once, then kept as the attribute ``_NAME`` (flux-core's
    ``flux.memoized_property``, which tools' subclasses of JobInfo use)."""
    attr_name = f"_{fget.__name__}"

    @wraps(fget)
    def fget_memoized(self: Any) -> _T:
        if attr_name not in self.__dict__:
            setattr(self, attr_name, fget(self))
        value: _T = self.__dict__[attr_name]
        return value

    return property(fget_memoized)


class ExceptionInfo:
    def __init__(self, occurred: Any, severity: Any, _type: Any, note: Any) -> None:
        self.occurred = occurred
        self.severity = severity
        self.type = _type
        self.note = note


class EmptyObject:
    """What a missing annotation reads as: every attribute of it is one too, and it
    prints and formats as "" (``{sched.reason_pending:>10}`` of a job without one)."""

    def __getattr__(self, attr: str) -> EmptyObject:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return EmptyObject()

    def __repr__(self) -> str:
        return ""

    def __str__(self) -> str:
        return ""

    def __format__(self, spec: str) -> str:
        return "".__format__(spec.rstrip("bcdoxXeEfFgGn%"))


class AnnotationsInfo:
    """A job's annotations read as attributes (``annotations.sched.resource_summary``);
    a nested object is one too, a missing key an ``EmptyObject``; prints as its JSON
    ("" when empty)."""

    def __init__(self, annotationsDict: dict[str, Any]) -> None:  # noqa: N803 - flux-core's
        self.annotationsDict = annotationsDict

    def __repr__(self) -> str:
        return json.dumps(self.annotationsDict) if self.annotationsDict else ""

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") or attr == "annotationsDict":
            raise AttributeError(attr)
        if attr not in self.annotationsDict:
            return EmptyObject()
        value = self.annotationsDict[attr]
        return AnnotationsInfo(value) if isinstance(value, dict) else value


def _stats_info(handle: Any) -> Any:
    """``StatsInfo``: JobStats, printed as ``flux jobs`` prints an instance's counts."""
    from flux.job.stats import StatsInfo

    return StatsInfo(handle)


class InstanceInfo:
    """What a job's nested instance (``uri``) says of itself: ``stats`` (its job
    counts), ``resources``, ``utilization`` (cores allocated / all),
    ``gpu_utilization`` and ``progress`` (jobs inactive / all); every one "" when
    there is no instance to ask."""

    def __init__(self, uri: Any = None) -> None:
        self.initialized = False
        self.stats: Any = EmptyObject()
        self.resources: Any = EmptyObject()
        if not uri:
            return
        try:
            import flux
            from flux.resource.list import resource_list

            handle = flux.Flux(str(uri))
            try:
                future = resource_list(handle)
                self.stats = _stats_info(handle).update_sync()
                self.resources = future.get()
            finally:
                handle.close()
            self.initialized = True
        except OSError:
            self.stats = EmptyObject()
            self.resources = EmptyObject()

    @memoized_property
    def utilization(self) -> Any:
        if self.initialized and self.resources.all.ncores:
            return self.resources.allocated.ncores / self.resources.all.ncores
        return ""

    @memoized_property
    def gpu_utilization(self) -> Any:
        if self.initialized and self.resources.all.ngpus > 0:
            return self.resources.allocated.ngpus / self.resources.all.ngpus
        return ""

    @memoized_property
    def progress(self) -> Any:
        if self.initialized and self.stats.total:
            return self.stats.inactive / self.stats.total
        return ""


class InfoList(list):  # type: ignore[type-arg]
    """A list printed as flux prints one in a job listing: comma-separated."""

    def __str__(self) -> str:
        return ",".join(str(item) for item in self)


class DependencyList(InfoList):
    """A job's dependencies, ``begin-time=T`` shown as ``begin@HH:MM`` (with the date
    when not today, ``:SS`` when not on a minute)."""

    def __init__(self, items: Iterable[str]) -> None:
        super().__init__(_jobinfo.dependency(dep) for dep in items)


class JobInfo:
    """A job-list response (or a job's result) as attributes."""

    defaults: ClassVar[dict[str, Any]] = {
        **_jobinfo.ZERO_DEFAULTS,
        "name": "",
        "cwd": "",
        "queue": "",
        "project": "",
        "bank": "",
        "ntasks": "",
        "ncores": "",
        "nnodes": "",
        "priority": "",
        "ranks": "",
        "nodelist": "",
        "success": "",
        "result": "",
        "waitstatus": "",
    }
    properties = (
        "id",
        "t_submit",
        "t_remaining",
        "state",
        "result",
        "username",
        "userid",
        "urgency",
        "runtime",
        "status",
        "returncode",
        "dependencies",
    )

    def __init__(self, info_resp: dict[str, Any]) -> None:
        info = dict(self.defaults)
        info.update(info_resp)
        info["id"] = JobID(info["id"])
        if "state" in info:
            info["state_id"] = info.pop("state")
        if "result" in info:
            info["result_id"] = info.pop("result")
        info["exception"] = ExceptionInfo(
            info.get("exception_occurred", ""),
            info.get("exception_severity", ""),
            info.get("exception_type", ""),
            info.get("exception_note", ""),
        )
        annotations = AnnotationsInfo(info.get("annotations", {}))
        info["annotations"] = annotations
        info["sched"] = annotations.sched
        info["user"] = annotations.user
        info["dependencies"] = DependencyList(info.get("dependencies", []))
        for key, value in info.items():
            setattr(self, f"_{key}", value)

    def __getattr__(self, attr: str) -> Any:
        """A value of the response (kept as ``_attr``)."""
        if attr.startswith("_"):
            raise AttributeError(attr)
        try:
            return self.__dict__[f"_{attr}"]
        except KeyError:
            raise AttributeError(f"invalid JobInfo attribute '{attr}'") from None

    def get_instance_info(self) -> JobInfo:
        """Ask the job's nested instance, if it runs one now, for ``instance``'s values."""
        running = self.uri and self.state_single == "R"
        self._instance = InstanceInfo(self.uri if running else None)
        return self

    def get_runtime(self) -> float:
        return float(_jobinfo.runtime(self.t_run, self.t_cleanup))

    def get_remaining_time(self) -> float:
        try:
            if str(self.status) != "RUN":
                return 0.0
            return _jobinfo.remaining(float(self.expiration))
        except (KeyError, AttributeError):
            return 0.0

    @memoized_property
    def uri(self) -> Any:
        """The ``flux.uri.JobURI`` a nested instance running in the job posted (its
        memo ``uri``), or None."""
        found = self.user.uri
        if not str(found):
            return None
        from flux._joburi import JobURI

        return JobURI(str(found))

    @property
    def t_remaining(self) -> float:
        return self.get_remaining_time()

    @memoized_property
    def state(self) -> str:
        return statetostr(self.state_id)

    @memoized_property
    def state_single(self) -> str:
        return statetostr(self.state_id, "S")

    @memoized_property
    def state_emoji(self) -> str:
        return statetoemoji(self.state_id)

    @memoized_property
    def result(self) -> str:
        return resulttostr(self.result_id)

    @memoized_property
    def result_abbrev(self) -> str:
        return resulttostr(self.result_id, "S")

    @memoized_property
    def result_emoji(self) -> str:
        return resulttoemoji(self.result_id)

    @memoized_property
    def username(self) -> str:
        return get_username(self.userid)

    @memoized_property
    def runtime(self) -> float:
        return self.get_runtime()

    @memoized_property
    def status(self) -> str:
        """The state while active, the result once inactive."""
        return statustostr(self.state_id, self.result_id)

    @memoized_property
    def status_abbrev(self) -> str:
        return statustostr(self.state_id, self.result_id, "S")

    @memoized_property
    def status_emoji(self) -> str:
        return statustoemoji(self.state_id, self.result_id)

    @memoized_property
    def returncode(self) -> Any:
        """The largest task exit code, -N for a signal N, -128 for a job canceled before
        it ran, 1 for one that failed before it ran; "" while active."""
        return _jobinfo.returncode(
            self.waitstatus,
            self.__dict__.get("_result_id"),
            FLUX_JOB_RESULT_CANCELED,
            FLUX_JOB_RESULT_FAILED,
        )

    @memoized_property
    def contextual_info(self) -> Any:
        """What to show beside a job: why it waits while pending (``priority-wait``,
        ``depends:...``, ``eta:...``, ``held``, ``priority-hold``), else its nodes."""
        state = str(self.state)
        if state != "SCHED":
            deps, nodes = self.dependencies, self.nodelist
            return _jobinfo.contextual_info(state, deps, None, None, None, nodes)
        estimate = self.sched.t_estimate
        if isinstance(estimate, (int, float)):
            return _jobinfo.contextual_info(state, "", estimate, None, None, "")
        return _jobinfo.contextual_info(state, "", None, self.urgency, self.priority, "")

    @memoized_property
    def contextual_time(self) -> float:
        """The duration asked for while pending, the run time after."""
        if str(self.state) in ("PRIORITY", "DEPEND", "SCHED"):
            return float(self.duration)
        return float(self.runtime)

    @memoized_property
    def inactive_reason(self) -> str:
        """How an inactive job ended, in words ("" while active)."""
        if str(self.state) != "INACTIVE":
            return ""
        exc = self.exception
        return _jobinfo.inactive_reason(
            str(self.result), exc.occurred, exc.type, exc.severity, exc.note, self.returncode
        )

    def to_dict(self, filtered: bool = True) -> dict[str, Any]:
        """The attributes as a dict (``jobid`` in f58 too); ``filtered``: without
        empty values and unset times."""
        result: dict[str, Any] = {}
        for attr in chain(self.defaults, self.properties):
            try:
                val = getattr(self, attr)
            except AttributeError:
                val = None
            if val is not None:
                result[attr] = val
        result["jobid"] = self.id.f58
        result["annotations"] = self.annotations.annotationsDict
        result["exception"] = dict(self.exception.__dict__)
        uri = self.uri
        if uri is not None:
            result["uri"] = str(uri)
        if not filtered:
            return result
        for key in list(result):
            val = result[key]
            zero_removed = key.startswith("t_") or key in ("runtime", "expiration")
            if val == "" or (zero_removed and val == 0):
                del result[key]
            if key == "exception" and not val["occurred"]:
                result["exception"] = {"occurred": False}
        if uri is not None:  # "uri" at the top, not again under annotations.user
            user = {k: v for k, v in result["annotations"]["user"].items() if k != "uri"}
            annotations = {k: v for k, v in result["annotations"].items() if k != "user"}
            if user:
                annotations["user"] = user
            result["annotations"] = annotations
        return result


def job_fields_to_attrs(fields: Iterable[str]) -> set[str]:
    """The job-list attributes to ask for to show ``fields`` (a KeyError names an
    unknown one, as flux-core's)."""
    return _jobinfo.attrs(fields)


def __getattr__(name: str) -> Any:
    """``JobInfoFormat`` (with ``flux.util``) and ``StatsInfo``, loaded on first use."""
    if name == "JobInfoFormat":
        from flux.job._infoformat import JobInfoFormat

        return JobInfoFormat
    if name == "StatsInfo":
        from flux.job.stats import StatsInfo

        return StatsInfo
    raise AttributeError(f"module 'flux.job.info' has no attribute {name!r}")
