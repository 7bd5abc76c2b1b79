"""job-ingest records a job as the uid it runs as: the instance owner's, never another."""

from __future__ import annotations

import errno
from types import SimpleNamespace

import pytest

from pflux.broker.router import Broker
from pflux.errors import RPCError
from pflux.ingest.service import IngestService
from support.instance import jobspec


def test_a_submit_from_anyone_but_the_owner_is_refused() -> None:
    service = IngestService(Broker(4242))
    request = SimpleNamespace(payload={"jobspec": jobspec()}, owner=True, userid=0)
    with pytest.raises(RPCError) as info:
        service.submit(request)  # type: ignore[arg-type]
    assert info.value.errnum == errno.EPERM
    assert info.value.errstr == (
        "uid 0 may not submit: every job runs as the instance owner, uid 4242,"
        " and is recorded as theirs"
    )
