"""``pflux job last``: the user's job ids, most recent first, sliced as flux's are
(its survival across a restart: ``test_restart_jobs.py``)."""

from __future__ import annotations

from pflux.api import Client
from support.instance import fails, jobspec, ok


def test_job_last_slices_the_users_history(uri: str, client: Client) -> None:
    jobs = [client.submit(jobspec()).f58 for _ in range(3)]
    assert ok(uri, "job", "last").split() == [jobs[-1]]
    assert ok(uri, "job", "last", "2").split() == jobs[:0:-1]
    assert ok(uri, "job", "last", "[2::-1]").split() == jobs  # the last 3, in submit order
    assert ok(uri, "job", "last", "[0:3]").split() == jobs[::-1]
    assert fails(uri, "job", "last", "[::0]").strip() == (
        "pflux-job: ERROR: could not parse python-style slice expression"
    )
    assert "neither a number" in fails(uri, "job", "last", "x", rc=2)
