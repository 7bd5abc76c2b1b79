"""Hypothesis's inactive jobs (``Ended``), for the records and the snapshot that hold them."""

from __future__ import annotations

from hypothesis import strategies as st

from pflux.manager.job import Ended

jobids = st.integers(min_value=1, max_value=(1 << 64) - 1)
notes = st.text(max_size=40)
# each built once: building a strategy costs more than drawing from it
exceptions = st.none() | st.tuples(st.sampled_from(["cancel", "exec", "x y"]), notes)
userids = st.integers(min_value=0, max_value=(1 << 32) - 1)
times = st.floats(min_value=0, max_value=4e9, allow_nan=False)
event_counts = st.integers(min_value=1, max_value=1 << 20)
statuses = st.none() | st.integers(min_value=0, max_value=65535)


@st.composite
def ended_jobs(draw: st.DrawFn, jobid: int | None = None) -> Ended:
    """An inactive job, ``jobid`` or any."""
    exception = draw(exceptions)
    return Ended(
        draw(jobids) if jobid is None else jobid,
        userid=draw(userids),
        t_inactive=draw(times),
        nevents=draw(event_counts),
        allocated=draw(st.booleans()),
        started=draw(st.booleans()),
        finish_status=draw(statuses),
        exception=exception,
        ended_by_exception=draw(st.booleans()),
    )
