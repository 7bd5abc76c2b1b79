"""A fatal error ends ``pflux start`` with exit status 1 and the reason on stderr.

A supervisor tells a crashed instance from a clean stop by the exit status
alone, so every fatal path (here: a KVS transaction that fails for a reason
other than space) must make it non-zero.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from pflux.cli import start
from pflux.ingest.service import IngestService
from pflux.kvs.store import Store
from support.instance import PFLUX


def test_a_fatal_kvs_error_exits_1_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(Store, "apply", broken)
    # the initial program's submit is the first commit, which fails
    argv = ["--state-dir", str(tmp_path / "state"), "--cores", "1"]
    rc = start.main([*argv, str(PFLUX), "submit", "true"])
    assert rc == 1
    err = capsys.readouterr().err
    assert "pflux-start: ERROR: the instance stopped: kvs: " in err
    assert "disk I/O error" in err


def test_a_clean_stop_exits_with_the_initial_programs_status(tmp_path: Path) -> None:
    argv = ["--state-dir", str(tmp_path / "state"), "--cores", "1"]
    assert start.main([*argv, "sh", "-c", "exit 3"]) == 3
    assert start.main([*argv, "true"]) == 0


def test_a_service_that_crashes_at_start_exits_1_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    async def crash(self: Any) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(IngestService, "start", crash)
    assert start.main(["--state-dir", str(tmp_path / "state"), "--cores", "1", "true"]) == 1
    err = capsys.readouterr().err
    assert "pflux-start: ERROR: the instance stopped: internal error: RuntimeError('a bug')" in err
