"""``pflux job memo`` end to end: RFC 21's memo event, shown as ``{user.KEY}`` in
``pflux jobs``, kept once the job is inactive; ``--volatile`` keeps it out of the
eventlog; flux-core's errors."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pflux.api import Client
from support.instance import fails, jobspec, ok, pflux, quiesce


@pytest.fixture(autouse=True)
def _clean(client: Client) -> Iterator[None]:
    yield
    quiesce(client)


def user(uri: str, jobid: object, field: str) -> str:
    return ok(uri, "jobs", "-n", "-o", f"{{{field}}}", str(jobid)).strip()


def test_memo_sets_user_annotations_until_and_after_the_end(uri: str, client: Client) -> None:
    jobid = client.submit(jobspec("0"))
    client.wait_event(jobid, "start")
    ok(uri, "job", "memo", str(jobid), "foo=42", "a.b.c=text", "a.d=[1, 2]")
    memo = client.wait_event(jobid, "memo")
    assert memo.context == {"foo": 42, "a": {"b": {"c": "text"}, "d": [1, 2]}}
    assert user(uri, jobid, "user.foo") == "42"
    assert user(uri, jobid, "user.a.b.c") == "text"
    assert user(uri, jobid, "annotations.user.a.b.c") == "text"
    ok(uri, "job", "memo", str(jobid), "foo=null")
    assert user(uri, jobid, "user.foo") == ""
    assert pflux(uri, "job", "memo", str(jobid), "s=-", stdin="from stdin").returncode == 0
    assert user(uri, jobid, "user.s") == "from stdin"
    client.cancel(jobid)
    client.wait(jobid)
    assert user(uri, jobid, "user.a.b.c") == "text"  # an inactive job keeps its memo
    assert fails(uri, "job", "memo", str(jobid), "x=1").strip() == (
        "pflux-job: ERROR: memo: job is inactive"
    )


def test_volatile_memo_is_shown_but_not_in_the_eventlog(uri: str, client: Client) -> None:
    jobid = client.submit(jobspec(), urgency="hold")
    ok(uri, "job", "memo", "--volatile", str(jobid), "vol=yes")
    assert user(uri, jobid, "user.vol") == "yes"
    assert "memo" not in [e.name for e in client.events(jobid, follow=False)]


def test_memo_errors(uri: str) -> None:
    assert fails(uri, "job", "memo", "ƒ2", "foo").strip() == (
        "pflux-job: ERROR: memo: no value for key=foo"
    )
    assert fails(uri, "job", "memo", "ƒ2", "foo=1").strip() == (
        "pflux-job: ERROR: memo: unknown job id"
    )
    assert "KEY=VALUE" in fails(uri, "job", "memo", "ƒ2", rc=2)
