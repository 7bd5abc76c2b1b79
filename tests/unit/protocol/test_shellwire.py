"""The records job-exec, the launcher and the shells exchange."""

from __future__ import annotations

import marshal
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.protocol import shellwire as wire

KINDS = st.sampled_from(
    [wire.SPAWN, wire.KILL, wire.TERMINATE, wire.OUTPUT, wire.EOF, wire.STARTED, wire.EXITED]
)
KEYS = st.builds(wire.shell_key, st.integers(0, (1 << 64) - 1), st.integers(0, (1 << 32) - 1))
RECORDS = st.lists(st.tuples(KINDS, KEYS, st.binary(max_size=64)), max_size=8)


def test_a_record_is_a_header_then_its_payload() -> None:
    data = wire.record(wire.EXITED, 258, b"256")
    zero = (0).to_bytes(4, "big")
    assert data == b"w" + (258).to_bytes(8, "big") + zero + (3).to_bytes(4, "big") + b"256"
    assert wire.split(data) == ([(wire.EXITED, 258, b"256")], len(data))


@given(st.integers(0, (1 << 64) - 1), st.integers(0, (1 << 32) - 1))
def test_a_shell_key_holds_its_job_and_rank_and_rank_0s_is_the_job_id(
    jobid: int, rank: int
) -> None:
    key = wire.shell_key(jobid, rank)
    assert (wire.key_job(key), wire.key_rank(key)) == (jobid, rank)
    assert wire.shell_key(jobid, 0) == jobid
    data = wire.record(wire.OUTPUT, key, b"x")
    assert data[9:13] == rank.to_bytes(4, "big")
    assert wire.split(data)[0] == [(wire.OUTPUT, key, b"x")]
    assert wire.key_name(key) == (f"{jobid} (rank {rank})" if rank else str(jobid))


@settings(max_examples=200)
@given(RECORDS, st.integers(0, 200))
def test_split_returns_whole_records_and_where_the_rest_starts(
    records: list[wire.Record], cut: int
) -> None:
    data = b"".join(wire.record(*r) for r in records)
    cut = min(cut, len(data))
    first, used = wire.split(data[:cut])
    assert used <= cut
    rest, end = wire.split(data[used:])
    assert first + rest == records
    assert used + end == len(data)


def test_split_reads_a_memoryview_too() -> None:
    data = bytearray(wire.record(wire.EOF, 7, b"o\0\0\0\1") + b"\0" * 8)
    with memoryview(data) as view:
        assert wire.split(view[:22]) == ([(wire.EOF, 7, b"o\0\0\0\1")], 22)


def test_split_reads_a_bytearray_that_is_then_cut() -> None:
    buffer = bytearray(wire.record(wire.STARTED, 1) + wire.record(wire.OUTPUT, 1, b"x")[:5])
    records, used = wire.split(buffer)
    del buffer[:used]  # the view split used is released
    assert records == [(wire.STARTED, 1, b"")]
    assert len(buffer) == 5


WRONG = {name: 0 for name in wire.Description._fields[1:]} | {"args": 0}


def test_a_description_names_its_fields_and_travels_as_a_plain_tuple() -> None:
    values = {name: index for index, name in enumerate(wire.Description._fields)}
    described = wire.Description(**values)
    assert described == wire.Description(*range(len(values)))
    assert (described.argv, described.pmi, described.ptys) == (0, 9, 15)
    read = wire.Description(*marshal.loads(marshal.dumps(tuple(described))))
    assert read == described
    assert read.tmpdir_env == values["tmpdir_env"]


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [((1, 2), {}), (tuple(range(20)), {}), ((1,), {"env": 2}), ((), {"argv": 1}), ((), WRONG)],
)
def test_a_description_with_fields_missing_or_too_many_is_refused(
    args: tuple[int, ...], kwargs: dict[str, int]
) -> None:
    fields = r"^Description takes its fields \(argv, env, .*, ptys, nosetpgrp, files, tmpdir_argv\)"
    with pytest.raises(TypeError, match=fields):
        wire.Description(*args, **kwargs)


def test_the_launcher_and_its_shells_import_no_typing() -> None:
    """Every shell is forked from the launcher: what it imports, each shell copies."""
    code = (
        "import sys; from pflux.shell.launcher import main; import pflux.shell.serve;"
        " print(sorted(m for m in ('typing', 'collections', 'enum') if m in sys.modules))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout == "[]\n"
