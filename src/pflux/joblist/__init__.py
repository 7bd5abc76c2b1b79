"""job-list: the index of every job that `pflux jobs` lists, fed by the job manager's journal.

``summary`` is one job's attributes, ``attributes`` renders those a listing asks
for, ``index`` the per-job ordering of journal entries and the listing orders (all
pure), ``service`` the RPCs, ``codes`` the numbers on the wire (which ``pflux jobs``
imports without the service).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pflux.joblist.service import JobList

__all__ = ["JobList"]


def __getattr__(name: str) -> Any:
    # the service pulls in asyncio and the broker: load it only when the broker asks
    if name == "JobList":
        from pflux.joblist.service import JobList

        return JobList
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
