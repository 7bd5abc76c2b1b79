"""``pflux top``'s panes as text: the resource bars and the inactive counts."""

from __future__ import annotations

from pflux.api.replies import JobListing
from pflux.cli.topview import Bar, Counts, bar, duration
from pflux.spec.fluid import JobID


def test_a_bar_fills_used_from_the_left_and_down_from_the_right() -> None:
    assert bar("cores", Bar(used=2, down=1, total=4), 20) == "cores [||||  ## 2/4]"
    assert bar("gpus", Bar(), 20) == " gpus [         0/0]"
    assert bar("nodes", Bar(used=1, total=1), 18) == "nodes [|||||| 1/1]"


def test_durations_have_two_significant_digits() -> None:
    assert [duration(s) for s in (0.5, 42, 150, 7200, 3 * 86400)] == [
        "0.5s",
        "42s",
        "2.5m",
        "2h",
        "3d",
    ]


def test_inactive_jobs_are_counted_once_and_asked_for_since_the_latest() -> None:
    counts = Counts()
    jobs = [
        JobListing(id=JobID(1), t_inactive=10.0, success=True),
        JobListing(id=JobID(2), t_inactive=12.0, success=False),
    ]
    counts.add_inactive(jobs)
    assert (counts.complete, counts.failed, counts.since) == (1, 1, 12.0)
    counts.add_inactive([JobListing(id=JobID(3), t_inactive=13.0, success=True)])
    assert (counts.complete, counts.failed, counts.since) == (2, 1, 13.0)
