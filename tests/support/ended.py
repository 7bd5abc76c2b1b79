"""Hypothesis's inactive jobs (``Ended``), for the records and the snapshot that hold them."""

from __future__ import annotations

from hypothesis import strategies as st

from pflux.manager.job import Ended

jobids = st.integers(min_value=1, max_value=(1 << 64) - 1)
notes = st.text(max_size=40)


@st.composite
def ended_jobs(draw: st.DrawFn, jobid: int | None = None) -> Ended:
    """An inactive job, ``jobid`` or any."""
    exception = draw(st.none() | st.tuples(st.sampled_from(["cancel", "exec", "x y"]), notes))
    return Ended(
        draw(jobids) if jobid is None else jobid,
        userid=draw(st.integers(min_value=0, max_value=(1 << 32) - 1)),
        t_inactive=draw(st.floats(min_value=0, max_value=4e9, allow_nan=False)),
        nevents=draw(st.integers(min_value=1, max_value=1 << 20)),
        allocated=draw(st.booleans()),
        started=draw(st.booleans()),
        finish_status=draw(st.none() | st.integers(min_value=0, max_value=65535)),
        exception=exception,
        ended_by_exception=draw(st.booleans()),
    )
