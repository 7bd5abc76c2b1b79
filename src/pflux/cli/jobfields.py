"""One job as `pflux jobs` shows it: job-list's attributes and the fields derived from them.

``JobInfo`` wraps a job object from ``job-list.list`` and computes each format
field (state and result names, run time, return code, contextual information,
annotation paths) only when a format asks for it, as flux-core's ``JobInfo``
does; ``attrs_for`` names the job-list attributes a set of fields needs, so a
listing asks for no more.
"""

from __future__ import annotations

from _pfluxcore import jobinfo as _jobinfo

from pflux.spec import statebits
from pflux.spec.fluid import JobID, ascii_f58_preferred
from pflux.spec.resultcodes import ABBREVIATIONS, NAMES, RESULT_CANCELED, RESULT_FAILED

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any, Final

_PENDING_OR_RUNNING: Final = statebits.PENDING | statebits.RUNNING


def number(value: Any) -> float | None:
    """``value`` as a float if it is a number (not a bool), else None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


# --- one job -----------------------------------------------------------------------------

# what a missing attribute reads as (flux-core's JobInfo defaults)
_DEFAULTS: Final[dict[str, Any]] = {"t_submit": 0.0, **_jobinfo.ZERO_DEFAULTS}


# asked once a process (functools.cache would cost a short command its import)
_ASCII_IDS: list[bool] = []
_USERNAMES: dict[int, str] = {}


def _ascii_ids() -> bool:
    if not _ASCII_IDS:
        _ASCII_IDS.append(ascii_f58_preferred())
    return _ASCII_IDS[0]


def username(userid: int) -> str:
    """The user name of ``userid``, or the number when there is none."""
    name = _USERNAMES.get(userid)
    if name is None:
        import pwd

        try:
            name = pwd.getpwuid(userid).pw_name
        except (KeyError, OverflowError):
            name = str(userid)
        _USERNAMES[userid] = name
    return name


class DisplayID(JobID):
    """A job id that prints in f58 (ASCII ``f`` when the output cannot carry ``ƒ``)."""

    __slots__ = ()

    def __str__(self) -> str:
        return self.f58plain if _ascii_ids() else self.f58

    def __format__(self, spec: str) -> str:
        if spec and spec[-1] in "bcdoxXn":
            return int.__format__(self, spec)
        return format(str(self), spec)


class Annotations:
    """An annotations object: prints as JSON (nothing when empty), reads down by key."""

    __slots__ = ("data",)

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def __str__(self) -> str:
        import json

        return json.dumps(self.data) if self.data else ""

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def lookup(self, path: list[str]) -> Any:
        """The value at ``path``; a flat dotted key (``sched.reason_pending``) counts too."""
        node: Any = self.data
        while path:
            if not isinstance(node, dict):
                return ""
            flat = ".".join(path)
            if flat in node:
                node = node[flat]
                break
            if path[0] not in node:
                return ""
            node = node[path[0]]
            path = path[1:]
        return Annotations(node) if isinstance(node, dict) else node


class InfoList(list[str]):
    """A list that prints comma separated."""

    def __str__(self) -> str:
        return ",".join(self)

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


class JobInfo:
    """One job of a job-list response, with the derived fields computed on demand."""

    __slots__ = ("_memo", "data")

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self._memo: dict[str, Any] = {}

    def get(self, field: str) -> Any:
        """The value of a format field (``""`` when the job does not have it)."""
        memo = self._memo
        if field in memo:
            return memo[field]
        compute = FIELDS.get(field)
        if compute is not None:
            value = compute(self)
        else:
            # annotations.PATH, sched.PATH or user.PATH: a path into the annotations
            root, _, rest = field.partition(".")
            path = rest.split(".") if root == "annotations" else [root, *rest.split(".")]
            value = self.get("annotations").lookup(path)
        memo[field] = value
        return value

    def raw(self, key: str) -> Any:
        """A job-list attribute, or its default when the job does not have it."""
        return self.data.get(key, _DEFAULTS.get(key, ""))

    @property
    def state_id(self) -> int:
        state = self.data.get("state")
        return state if type(state) is int else 0

    @property
    def result_id(self) -> int:
        result = self.data.get("result")
        return result if type(result) is int else 0

    def to_dict(self) -> dict[str, Any]:
        """The job as ``flux jobs --json`` shows it: set values only, names not numbers."""
        out: dict[str, Any] = {}
        for key in _JSON_KEYS:
            value = self.get(key)
            if isinstance(value, InfoList):
                value = list(value)
            if value == "" or (value == 0 and (key.startswith("t_") or key in _ZERO_UNSET)):
                continue
            out[key] = int(value) if key == "id" else value
        out["jobid"] = JobID(self.get("id")).f58
        annotations = self.get("annotations").data
        uri = self.get("uri")
        if uri:  # as flux's: "uri" at the top, not again under annotations.user
            out["uri"] = uri
            user = {k: v for k, v in annotations["user"].items() if k != "uri"}
            annotations = {k: v for k, v in annotations.items() if k != "user"}
            if user:
                annotations["user"] = user
        out["annotations"] = annotations
        if self.raw("exception_occurred") is True:
            out["exception"] = {
                "occurred": True,
                "severity": self.raw("exception_severity"),
                "type": self.raw("exception_type"),
                "note": self.raw("exception_note"),
            }
        else:
            out["exception"] = {"occurred": False}
        return out


def _state_name(job: JobInfo) -> str:
    state = job.state_id
    return statebits.NAMES.get(state, "") if isinstance(state, int) else ""


def _state_single(job: JobInfo) -> str:
    state = job.state_id
    return statebits.LETTERS.get(state, "") if isinstance(state, int) else ""


def _status(job: JobInfo) -> str:
    if job.state_id & _PENDING_OR_RUNNING:
        return _state_name(job)
    return NAMES.get(job.result_id, "")


def _status_abbrev(job: JobInfo) -> str:
    if job.state_id & _PENDING_OR_RUNNING:
        return _state_single(job)
    return ABBREVIATIONS.get(job.result_id, "")


def _runtime(job: JobInfo) -> float:
    return _jobinfo.runtime(number(job.raw("t_run")) or 0.0, number(job.raw("t_cleanup")) or 0.0)


def _t_remaining(job: JobInfo) -> float:
    if _status(job) != "RUN":
        return 0.0
    return _jobinfo.remaining(number(job.raw("expiration")) or 0.0)


def _returncode(job: JobInfo) -> int | str:
    """The highest task exit code, -signal, -128 if canceled before running, 1 if it failed."""
    code: int | str = _jobinfo.returncode(
        job.raw("waitstatus"), job.result_id, RESULT_CANCELED, RESULT_FAILED
    )
    return code


def _dependencies(job: JobInfo) -> InfoList:
    deps = job.data.get("dependencies")
    return (
        InfoList(_jobinfo.dependency(d) for d in deps if isinstance(d, str)) if deps else InfoList()
    )


def _contextual_info(job: JobInfo) -> Any:
    """What matters for the job's state (flux-core's ``contextual_info``), with the
    scheduler's pending reason, if any, for a pending job it gives no estimate for."""
    state = _state_name(job)
    reason = job.get("sched.reason_pending") if state == "SCHED" else ""
    return _jobinfo.contextual_info(
        state,
        job.get("dependencies") if state == "DEPEND" else "",
        job.get("sched.t_estimate") if state == "SCHED" else None,
        job.raw("urgency"),
        job.raw("priority"),
        job.raw("nodelist"),
        reason if isinstance(reason, str) else "",
    )


def _contextual_time(job: JobInfo) -> Any:
    if _state_name(job) in ("DEPEND", "PRIORITY", "SCHED"):
        return job.raw("duration")
    return job.get("runtime")


def _inactive_reason(job: JobInfo) -> str:
    """Why an inactive job ended, in flux-core's words."""
    if _state_name(job) != "INACTIVE":
        return ""
    return _jobinfo.inactive_reason(
        NAMES.get(job.result_id, ""),
        job.raw("exception_occurred") is True,
        job.raw("exception_type"),
        job.raw("exception_severity"),
        job.raw("exception_note"),
        job.get("returncode"),
    )


def _state_emoji(job: JobInfo) -> str:
    single = _state_single(job)
    emoji = _jobinfo.STATE_EMOJI.get(single, "")
    return _jobinfo.printable(emoji, single) if emoji else single


def _result_emoji(job: JobInfo) -> str:
    return _jobinfo.printable(*_jobinfo.RESULT_EMOJI[ABBREVIATIONS.get(job.result_id, "")])


def _status_emoji(job: JobInfo) -> str:
    return _state_emoji(job) if job.state_id & _PENDING_OR_RUNNING else _result_emoji(job)


def _id_as(encoding: str) -> Callable[[JobInfo], Any]:
    return lambda job: job.get("id").encode(encoding)


def _attr(name: str) -> Callable[[JobInfo], Any]:
    return lambda job: job.raw(name)


def _annotations(job: JobInfo) -> Annotations:
    data = job.data.get("annotations")
    return Annotations(data if isinstance(data, dict) else {})


def _uri(job: JobInfo) -> str:
    """The URI a nested instance running in the job posted (memo ``uri``): always a
    ``local://`` one in pflux, so ``uri.local`` is the same."""
    uri = job.get("annotations").lookup(["user", "uri"])
    return uri if isinstance(uri, str) else ""


def _instance_field(name: str) -> Callable[[JobInfo], Any]:
    """An ``instance.*`` field: asked of the nested instance the job runs, if it does."""

    def get(job: JobInfo) -> Any:
        from pflux.cli import jobinstance

        return jobinstance.value(job, name)

    return get


FIELDS: Final[dict[str, Callable[[JobInfo], Any]]] = {
    "id": lambda job: DisplayID(job.data["id"]),
    "id.dec": _id_as("dec"),
    "id.hex": _id_as("hex"),
    "id.f58": lambda job: str(job.get("id")),
    "id.f58plain": _id_as("f58plain"),
    "id.kvs": _id_as("kvs"),
    "id.words": _id_as("words"),
    "id.dothex": _id_as("dothex"),
    "userid": _attr("userid"),
    "username": lambda job: username(job.data["userid"]) if "userid" in job.data else "",
    "urgency": _attr("urgency"),
    "priority": _attr("priority"),
    "state": _state_name,
    "state_single": _state_single,
    "state_emoji": _state_emoji,
    "name": _attr("name"),
    "cwd": _attr("cwd"),
    "queue": _attr("queue"),
    "project": _attr("project"),
    "bank": _attr("bank"),
    "ntasks": _attr("ntasks"),
    "ncores": _attr("ncores"),
    "duration": _attr("duration"),
    "nnodes": _attr("nnodes"),
    "expiration": _attr("expiration"),
    "t_remaining": _t_remaining,
    "ranks": _attr("ranks"),
    "nodelist": _attr("nodelist"),
    "success": _attr("success"),
    "result": lambda job: NAMES.get(job.result_id, ""),
    "result_abbrev": lambda job: ABBREVIATIONS.get(job.result_id, ""),
    "result_emoji": _result_emoji,
    "t_submit": _attr("t_submit"),
    "t_depend": _attr("t_depend"),
    "t_priority": _attr("t_priority"),
    "t_sched": _attr("t_sched"),
    "t_run": _attr("t_run"),
    "t_cleanup": _attr("t_cleanup"),
    "t_inactive": _attr("t_inactive"),
    "runtime": _runtime,
    "status": _status,
    "status_abbrev": _status_abbrev,
    "status_emoji": _status_emoji,
    "waitstatus": _attr("waitstatus"),
    "returncode": _returncode,
    "exception.occurred": _attr("exception_occurred"),
    "exception.severity": _attr("exception_severity"),
    "exception.type": _attr("exception_type"),
    "exception.note": _attr("exception_note"),
    "annotations": _annotations,
    "sched": lambda job: job.get("annotations").lookup(["sched"]),
    "user": lambda job: job.get("annotations").lookup(["user"]),
    "uri": _uri,
    "uri.local": _uri,
    "dependencies": _dependencies,
    "contextual_info": _contextual_info,
    "contextual_time": _contextual_time,
    "inactive_reason": _inactive_reason,
    **{name: _instance_field(name) for name in _jobinfo.INSTANCE_HEADINGS},
}

_ZERO_UNSET: Final = frozenset(("runtime", "expiration"))
_JSON_KEYS: Final = (
    "t_depend", "t_priority", "t_sched", "t_run", "t_cleanup", "t_inactive", "duration",
    "expiration", "name", "cwd", "queue", "project", "bank", "ntasks", "ncores", "nnodes",
    "priority", "ranks", "nodelist", "success", "result", "waitstatus", "id", "t_submit",
    "t_remaining", "state", "username", "userid", "urgency", "runtime", "status",
    "returncode", "dependencies",
)  # fmt: skip


def attrs_for(fields: Iterable[str]) -> list[str]:
    """The job-list attributes that the format ``fields`` need."""
    return sorted(_jobinfo.attrs(fields))


def is_field(name: str) -> bool:
    return name in FIELDS or name.startswith(_jobinfo.ANNOTATION_PREFIXES)


# --- headings ------------------------------------------------------------------------------


def heading(field: str) -> str:
    return _jobinfo.heading(field) or field.upper()
