"""job-ingest's checks of the submit flags (flux-core's job-ingest rules)."""

from __future__ import annotations

import errno
import os
from types import SimpleNamespace

import pytest

from pflux.broker.router import Broker
from pflux.errors import RPCError
from pflux.ingest.service import IngestService
from pflux.spec.states import FLAG_WAITABLE
from support.instance import jobspec


def submit(flags: int, *, owner: bool) -> None:
    service = IngestService(Broker(os.getuid()))
    request = SimpleNamespace(payload={"jobspec": jobspec(), "flags": flags}, owner=owner)
    service.submit(request)  # type: ignore[arg-type]


def test_only_the_owner_may_submit_waitable_jobs() -> None:
    with pytest.raises(RPCError) as info:
        submit(FLAG_WAITABLE, owner=False)
    assert info.value.errnum == errno.EINVAL
    assert info.value.errstr == "only the instance owner can submit with FLUX_JOB_WAITABLE"
