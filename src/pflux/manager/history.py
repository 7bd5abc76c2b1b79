"""Each user's jobs, most recent first, for ``pflux job last`` (flux-core's history plugin).

Job ids are FLUIDs, ordered as their submissions (RFC 19), so a user's
history is the user's job ids in descending order; it is rebuilt from the
jobs at a restart. ``get`` answers a Python-style slice of it,
``[start:stop[:step]]``, as flux-core's ``job-manager.history.get`` does.
"""

from __future__ import annotations

import bisect
import errno
import re
from collections.abc import Callable, Iterable

from pflux.errors import RPCError

_SLICE = re.compile(r"\[([+-]?\d+)?:([+-]?\d+)?(?::([+-]?\d+)?)?\]")
SLICE_ERROR = "could not parse python-style slice expression"


def parse_slice(text: str) -> slice:
    """``[start:stop[:step]]``, each part optional (step not 0), as a ``slice``."""
    match = _SLICE.fullmatch(text)
    if match is None or (match.group(3) is not None and int(match.group(3)) == 0):
        raise RPCError(errno.EINVAL, SLICE_ERROR)
    start, stop, step = (None if part is None else int(part) for part in match.groups())
    return slice(start, stop, step)


class History:
    """Job ids by user, in submission order (ascending; read from the end).

    After a restart it is built only when first asked (``get``), from the job
    manager's tables as they are then: a restart of a million jobs does not
    wait for it. Until then ``add`` and ``remove`` have nothing to do, since
    the tables it will be built from hold every job added and none removed.
    """

    def __init__(self) -> None:
        self._users: dict[int, list[int]] = {}
        self._known: Callable[[], Iterable[tuple[int, int]]] | None = None

    def rebuild(self, known: Callable[[], Iterable[tuple[int, int]]]) -> None:
        """After a restart: ``known()`` gives every (userid, jobid) the history holds, at
        any time until it is built."""
        self._users = {}
        self._known = known

    def _built(self) -> dict[int, list[int]]:
        if self._known is not None:
            known, self._known = self._known, None
            users = self._users
            for userid, jobid in known():
                ids = users.get(userid)
                if ids is None:
                    users[userid] = [jobid]
                else:
                    ids.append(jobid)
            for ids in users.values():
                ids.sort()
        return self._users

    def add(self, userid: int, jobid: int) -> None:
        if self._known is not None:
            return
        ids = self._users.setdefault(userid, [])
        if not ids or jobid > ids[-1]:
            ids.append(jobid)
        else:
            bisect.insort(ids, jobid)

    def remove(self, userid: int, jobid: int) -> None:
        """Forget a purged job (the oldest, usually: near the front)."""
        if self._known is not None:
            return
        ids = self._users.get(userid)
        if ids:
            i = bisect.bisect_left(ids, jobid)
            if i < len(ids) and ids[i] == jobid:
                del ids[i]
                if not ids:
                    del self._users[userid]

    def get(self, userid: int, text: str) -> list[int]:
        """The slice ``text`` of ``userid``'s jobs, index 0 the most recent."""
        selected = parse_slice(text)
        return list(reversed(self._built().get(userid, ())))[selected]
