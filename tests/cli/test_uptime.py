"""``pflux uptime`` without an instance: the counts flux-uptime(1) appends to its line."""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

import pytest

from pflux.cli import uptime


@pytest.fixture
def status(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The scheduler's resource-status answer the fake client gives."""
    reply: dict[str, Any] = {}

    class FakeClient:
        def __init__(self, uri: str | None) -> None:
            self.uri = uri

        def __enter__(self) -> FakeClient:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def attrs(self) -> dict[str, str]:
            return {
                "security.owner": str(os.getuid()),
                "broker.starttime": "0",
                "instance-level": "0",
                "size": "4",
            }

        def queue_status(self) -> Any:
            return SimpleNamespace(enable=True, start=True)

        def resource_status(self) -> dict[str, Any]:
            return reply

    monkeypatch.setattr("pflux.Client", FakeClient, raising=False)  # the name the CLI takes
    return reply


def test_drained_and_offline_ranks_are_counted_as_flux_does(
    status: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    status.update(drain={"2": {"timestamp": 0, "reason": ""}}, offline="1-3")
    assert uptime.main([]) == 0
    assert capsys.readouterr().out.rstrip("\n").endswith("size 4,  1 drained,  3 offline")
    status.update(drain={}, offline="")
    assert uptime.main([]) == 0
    assert capsys.readouterr().out.rstrip("\n").endswith("size 4")
