"""WAL damage: found where SQLite would drop transactions, never in a WAL it reads whole."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.kvs import wal

TRANSACTIONS = 12


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where examples write their WAL (hypothesis runs many per test function)."""
    return tmp_path_factory.mktemp("examples") / "wal"


@pytest.fixture(scope="module")
def intact(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A WAL of ``TRANSACTIONS`` transactions, taken while its database is open."""
    tmp = tmp_path_factory.mktemp("wal")
    conn = sqlite3.connect(tmp / "db", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.execute("CREATE TABLE t (x TEXT)")
    for i in range(TRANSACTIONS):
        conn.execute("INSERT INTO t VALUES (?)", (f"{i}" * 3000,))
    shutil.copy(tmp / "db-wal", tmp / "copy")
    conn.close()
    return (tmp / "copy").read_bytes()


def damage_of(path: Path, data: bytes) -> str | None:
    path.write_bytes(data)
    return wal.damage(str(path))


def test_an_intact_missing_or_empty_wal_is_not_damaged(intact: bytes, scratch: Path) -> None:
    assert damage_of(scratch, intact) is None
    assert damage_of(scratch, b"") is None
    assert wal.damage(str(scratch.with_name("missing"))) is None


def test_a_zeroed_wal_is_damaged(intact: bytes, scratch: Path) -> None:
    assert damage_of(scratch, bytes(len(intact))) == "its header is not a WAL header"


@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_a_changed_byte_before_the_last_frame_is_found(
    intact: bytes, scratch: Path, data: st.DataObject
) -> None:
    """(A changed last frame is a torn last write: SQLite's call again.)"""
    frame = wal.FRAME_HEADER + 4096
    last = len(intact) - frame
    at = data.draw(st.integers(0, last - 1), label="offset")
    flip = data.draw(st.integers(1, 255), label="xor")
    damaged = intact[:at] + bytes([intact[at] ^ flip]) + intact[at + 1 :]
    assert damage_of(scratch, damaged) is not None


@settings(max_examples=50, deadline=None)
@given(cut=st.integers(0, 1 << 20))
def test_a_wal_cut_short_is_not_taken_for_damage(intact: bytes, scratch: Path, cut: int) -> None:
    """It cannot be told from one whose last writes never happened (a crash): SQLite's call."""
    damage = damage_of(scratch, intact[: cut % (len(intact) + 1)])
    assert damage in (None, "shorter than a WAL header")
