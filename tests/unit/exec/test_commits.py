"""How job-exec splits a turn's writes into commits (``split_commits``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pflux.exec.writes import split_commits

RUNS = st.sampled_from("abcd")
KEYS = st.text("xyz.", min_size=1, max_size=4)
BATCH = st.dictionaries(KEYS, st.tuples(RUNS, st.lists(st.text("ab", max_size=2), min_size=1)))


@given(BATCH, BATCH, st.sets(RUNS))
def test_a_finishing_job_has_its_writes_to_itself_and_last(
    new: dict[str, tuple[str, list[str]]],
    appends: dict[str, tuple[str, list[str]]],
    finals: set[str],
) -> None:
    """Every write is sent once; one of a job whose namespace goes this turn is in that
    job's own commit, after every shared one, puts first: no other job's failed batch can
    hold back its last events."""
    commits = split_commits(new, appends, finals)
    sent = [
        (op, key, text, run)
        for ops, runs in commits
        for (op, key, text), run in zip(ops, runs, strict=True)
    ]
    wanted = [
        (op, key, "".join(texts), run)
        for op, batch in (("put", new), ("append", appends))
        for key, (run, texts) in batch.items()
    ]
    assert sorted(sent) == sorted(wanted)
    assert all(ops for ops, _ in commits)
    shared = [runs for _, runs in commits if not set(runs) <= finals or len(set(runs)) > 1]
    own = [runs for _, runs in commits if set(runs) <= finals and len(set(runs)) == 1]
    assert not any(set(runs) & finals for runs in shared)
    assert commits[: len(shared)] == [c for c in commits if c[1] in shared]
    assert len({runs[0] for runs in own}) == len(own)  # one commit for each such job
    for ops, _ in commits[len(shared) :]:
        kinds = [op for op, _, _ in ops]
        assert kinds == sorted(kinds, key=["put", "append"].index)
    assert len(shared) <= 2  # the puts and the appends of every other job
