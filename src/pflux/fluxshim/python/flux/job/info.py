"""``flux.job.JobInfo``: a job as job-list (or ``result()``) describes it.

Attributes come from the response (``id``, ``userid``, ``urgency``, ``priority``,
``t_submit``... ``t_inactive``, ``name``, ``ntasks``, ``nnodes``, ``nodelist``,
``waitstatus``...) or are worked out as flux-core's are: ``state`` and ``result``
as names (``RUN``, ``COMPLETED``), ``returncode``, ``runtime``, ``status``,
``username``, ``exception`` (``occurred``, ``severity``, ``type``, ``note``).
"""

from __future__ import annotations

import os
import time
from itertools import chain

from flux.constants import FLUX_JOB_RESULT_CANCELED, FLUX_JOB_RESULT_FAILED
from flux.job.JobID import JobID

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

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


class ExceptionInfo:
    def __init__(self, occurred: Any, severity: Any, _type: Any, note: Any) -> None:
        self.occurred = occurred
        self.severity = severity
        self.type = _type
        self.note = note


class JobInfo:
    """A job-list response (or a job's result) as attributes."""

    defaults: ClassVar[dict[str, Any]] = {
        "t_depend": 0.0,
        "t_priority": 0.0,
        "t_sched": 0.0,
        "t_run": 0.0,
        "t_cleanup": 0.0,
        "t_inactive": 0.0,
        "duration": 0.0,
        "expiration": 0.0,
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
        info.setdefault("annotations", {})
        info.setdefault("dependencies", [])
        self._info = info

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("_"):
            raise AttributeError(attr)
        try:
            return self._info[attr]
        except KeyError:
            raise AttributeError(f"invalid JobInfo attribute '{attr}'") from None

    @property
    def state(self) -> str:
        return statetostr(self.state_id)

    @property
    def uri(self) -> Any:
        """The ``flux.uri.JobURI`` a nested instance running in the job posted (its
        memo ``uri``), or None."""
        user = self._info["annotations"].get("user")
        found = user.get("uri") if isinstance(user, dict) else None
        if not found:
            return None
        from flux.uri import JobURI

        return JobURI(str(found))

    @property
    def state_single(self) -> str:
        return statetostr(self.state_id, "S")

    @property
    def result(self) -> str:
        return resulttostr(self.result_id)

    @property
    def result_abbrev(self) -> str:
        return resulttostr(self.result_id, "S")

    @property
    def status(self) -> str:
        """The state while active, the result once inactive."""
        if self._info.get("state_id", 64) != 64:
            return self.state
        return self.result

    @property
    def status_abbrev(self) -> str:
        if self._info.get("state_id", 64) != 64:
            return self.state_single
        return self.result_abbrev

    @property
    def username(self) -> str:
        import pwd

        try:
            return pwd.getpwuid(self.userid).pw_name
        except KeyError:
            return str(self.userid)

    @property
    def runtime(self) -> float:
        t_run, t_cleanup = self.t_run, self.t_cleanup
        if t_cleanup > 0 and t_run > 0:
            return float(t_cleanup - t_run)
        if t_run > 0:
            return float(time.time() - t_run)
        return 0.0

    @property
    def t_remaining(self) -> float:
        if self._info.get("state_id") != 16 or not self.expiration:
            return 0.0
        return max(0.0, float(self.expiration - time.time()))

    @property
    def returncode(self) -> Any:
        """The largest task exit code, -N for a signal N, -128 for a job canceled before
        it ran, 1 for one that failed before it ran; "" while active."""
        status = self.waitstatus
        result_id = self._info.get("result_id")
        if not isinstance(status, int):
            if result_id == FLUX_JOB_RESULT_CANCELED:
                return -128
            if result_id == FLUX_JOB_RESULT_FAILED:
                return 1
            return ""
        if os.WIFSIGNALED(status):
            return -os.WTERMSIG(status)
        if os.WIFEXITED(status):
            return os.WEXITSTATUS(status)
        return ""

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
        result["annotations"] = self._info["annotations"]
        result["exception"] = dict(self._info["exception"].__dict__)
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
