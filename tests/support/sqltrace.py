"""The statements SQLite connections run, for tests of what a store checks when it opens."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest


def traced_opens(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements every SQLite connection opened from here on runs."""
    statements: list[str] = []
    connect = sqlite3.connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        conn = connect(*args, **kwargs)
        conn.set_trace_callback(statements.append)
        return conn

    monkeypatch.setattr(sqlite3, "connect", traced)
    return statements
