"""The job shell's log of records: whatever job-exec has not acknowledged, in memory or spooled.

A property test drives it as the shell does (records made, sent a chunk at a
time, acknowledged, job-exec going away and a new one resuming from an
offset it has) and checks that what is sent is always the job's record
stream from the offset asked for, in whole records, whichever of memory and
spool it came from.
"""

from __future__ import annotations

import os
import tempfile

from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.protocol import shellwire as wire
from pflux.shell.acklog import AckLog

OPS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, 3000)),
        st.tuples(st.just("send"), st.integers(1, 4)),
        st.tuples(st.just("ack"), st.floats(0, 1)),
        st.tuples(st.just("detach"), st.just(0)),
        st.tuples(st.just("resume"), st.floats(0, 1)),
    ),
    max_size=60,
)


@settings(max_examples=150, deadline=None)
@given(OPS)
def test_what_is_sent_is_the_record_stream_from_where_job_exec_asked(
    ops: list[tuple[str, float]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log = AckLog(os.path.join(tmp, "spool"))
        stream = b""  # every record made, in order
        bounds = [0]  # offsets where records begin
        detached = False
        for op, arg in ops:
            if op == "add":
                record = wire.record(wire.OUTPUT, 7, bytes([len(bounds) % 256]) * int(arg))
                log.add(record, spooling=detached)
                stream += record
                bounds.append(len(stream))
            elif op == "send" and not detached:
                for _ in range(int(arg)):
                    if log.sent >= log.end:
                        break
                    data, records = log.chunk()
                    assert data == stream[log.sent : log.sent + len(data)]
                    assert log.sent + len(data) in bounds  # whole records
                    assert wire.split(data)[1] == len(data)
                    log.advance(data, records)
            elif op == "ack" and not detached:  # job-exec commits some of what it got
                done = [b for b in bounds if log.acked <= b <= log.sent]
                log.ack(done[int(arg * (len(done) - 1))])
            elif op == "detach":
                detached = True
                log.spool_all()
            elif op == "resume" and detached:  # the KVS has at least what was acknowledged
                held = [b for b in bounds if log.acked <= b <= log.sent]
                log.rewind(held[int(arg * (len(held) - 1))])
                detached = False
            assert log.end == len(stream)
            assert log.acked <= log.sent <= log.end
        log.drop_spool()
