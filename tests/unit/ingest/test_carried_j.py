"""The J job-ingest hands the job manager with a job, for job-exec: a guest's, up to
``CARRIED_J`` characters (a longer one, and the owner's, job-exec reads from the KVS)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pflux.ingest import service
from pflux.ingest.service import CARRIED_J


def carried(signed: str | None, *, owner: bool) -> str | None:
    sub: Any = SimpleNamespace(J=signed, req=SimpleNamespace(owner=owner))
    return service._carried(sub)


def test_a_guests_j_goes_with_its_job() -> None:
    assert carried("HEADER.PAYLOAD.SIGNATURE", owner=False) == "HEADER.PAYLOAD.SIGNATURE"
    assert carried("J" * CARRIED_J, owner=False) == "J" * CARRIED_J


@pytest.mark.parametrize(
    ("signed", "owner"),
    [(None, True), ("HEADER.PAYLOAD.SIGNATURE", True), ("J" * (CARRIED_J + 1), False)],
    ids=["the owner's, signed here", "the owner's, signed", "a guest's, too long"],
)
def test_no_j_goes_with_the_owners_job_nor_a_long_one(signed: str | None, owner: bool) -> None:
    assert carried(signed, owner=owner) is None
