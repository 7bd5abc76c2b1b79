"""Journal entries as the job manager publishes them, for the job-list tests and benchmark.

``Story`` numbers each job's events (``seq``) and stamps them a tenth of a
second apart; the helpers below tell the common RFC 21 stories.
"""

from __future__ import annotations

from typing import Any

from pflux.spec.builder import from_command

R_2NODES: dict[str, Any] = {
    "version": 1,
    "execution": {
        "R_lite": [{"rank": "0-1", "children": {"core": "0-3"}}],
        "nodelist": ["node[0-1]"],
        "starttime": 1000.0,
        "expiration": 4600.0,
    },
}


def jobspec(command: str = "/bin/true", **options: Any) -> dict[str, Any]:
    return from_command([command], cwd="/home/user", **options)


class Story:
    """One job's journal entries, in order."""

    def __init__(self, jobid: int, t0: float = 1000.0) -> None:
        self.jobid = jobid
        self.t = t0
        self.entries: list[dict[str, Any]] = []

    def event(self, name: str, context: dict[str, Any] | None = None, **extra: Any) -> Story:
        self.t = round(self.t + 0.1, 3)
        entry: dict[str, Any] = {"timestamp": self.t, "name": name}
        if context is not None:
            entry["context"] = context
        self.entries.append({"id": self.jobid, "seq": len(self.entries), "entry": entry, **extra})
        return self

    def annotate(self, annotations: dict[str, Any]) -> dict[str, Any]:
        """An annotations entry (seq -1), not part of the eventlog."""
        entry = {"timestamp": self.t, "name": "annotations", "context": annotations}
        return {"id": self.jobid, "seq": -1, "entry": entry}

    def submit(self, *, userid: int = 1000, urgency: int = 16, spec: Any = None) -> Story:
        context = {"userid": userid, "urgency": urgency, "flags": 0}
        return self.event("submit", context, jobspec=jobspec() if spec is None else spec)

    def pending(self, *, userid: int = 1000, priority: int = 16, spec: Any = None) -> Story:
        """submit, validate, depend, priority: waiting in SCHED."""
        self.submit(userid=userid, spec=spec).event("validate").event("depend")
        return self.event("priority", {"priority": priority})

    def running(self, **kwargs: Any) -> Story:
        return self.pending(**kwargs).event("alloc", R=R_2NODES).event("start")

    def finish(self, status: int = 0) -> Story:
        self.event("finish", {"status": status}).event("release", {"ranks": "all", "final": True})
        return self.event("free").event("clean")

    def completed(self, status: int = 0, **kwargs: Any) -> Story:
        return self.running(**kwargs).finish(status)

    def exception(self, etype: str, severity: int = 0, note: str = "") -> Story:
        return self.event("exception", {"type": etype, "severity": severity, "note": note})
