"""The queue and the policy: priority then submit order, EASY backfill, annotations."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.sched.policy import REASON_BLOCKED, PendingJob, Policy, Queue
from pflux.sched.pool import Pool, ResourceRequest
from pflux.spec.idset import IdSet
from pflux.spec.resource import ResourceSet, Target

NOW = 1_700_000_000.0


def policy_of(cores: int, gpus: int = 0, depth: int = 32) -> Policy:
    gpuset = IdSet.range(0, gpus - 1) if gpus else IdSet()
    pool = Pool(ResourceSet({0: Target("node0", IdSet.range(0, cores - 1), gpuset)}))
    return Policy(pool, depth=depth)


def job(
    jobid: int,
    cores: int = 1,
    *,
    priority: int = 16,
    t_submit: float | None = None,
    duration: float = 0.0,
    gpus: int = 0,
) -> PendingJob:
    request = ResourceRequest(1, cores, gpus, duration=duration)
    return PendingJob(jobid, priority, float(jobid) if t_submit is None else t_submit, request)


def submit(policy: Policy, *jobs: PendingJob) -> None:
    for j in jobs:
        policy.queue.add(j)


def started(policy: Policy, now: float = NOW) -> list[int]:
    return [j.id for j, _ in policy.schedule(now).allocated]


# --- the queue -----------------------------------------------------------------------


def test_queue_orders_by_priority_then_submit_time_then_id() -> None:
    queue = Queue()
    for j in (
        job(5, t_submit=1.0),
        job(4, t_submit=1.0),
        job(3, priority=20, t_submit=9.0),
        job(2, t_submit=0.5),
        job(1, priority=0),
    ):
        queue.add(j)
    assert [j.id for j in queue] == [3, 2, 4, 5, 1]
    assert queue.reprioritize(1, 100)
    assert not queue.reprioritize(99, 1)
    assert [j.id for j in queue] == [1, 3, 2, 4, 5]
    removed = queue.remove(2)
    assert removed is not None
    assert removed.id == 2
    assert queue.remove(2) is None
    assert [j.id for j in queue] == [1, 3, 4, 5]
    assert 2 not in queue
    assert len(queue) == 4
    with pytest.raises(ValueError, match="already queued"):
        queue.add(job(1))


QUEUE_OPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "remove", "prioritize"]), st.integers(0, 15), st.integers(0, 3)
    ),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(ops=QUEUE_OPS)
def test_queue_matches_a_sorted_reference(ops: list[tuple[str, int, int]]) -> None:
    queue = Queue()
    reference: dict[int, tuple[int, float]] = {}  # id -> (priority, t_submit)
    for op, jobid, value in ops:
        if op == "add" and jobid not in reference:
            queue.add(job(jobid, priority=value, t_submit=float(jobid % 4)))
            reference[jobid] = (value, float(jobid % 4))
        elif op == "remove":
            assert (queue.remove(jobid) is not None) == (jobid in reference)
            reference.pop(jobid, None)
        elif op == "prioritize":
            assert queue.reprioritize(jobid, value) == (jobid in reference)
            if jobid in reference:
                reference[jobid] = (value, reference[jobid][1])
        expected = sorted(reference, key=lambda i: (-reference[i][0], reference[i][1], i))
        assert [j.id for j in queue] == expected
        assert all(jobid in queue for jobid in reference)


# --- order ----------------------------------------------------------------------------


def test_higher_priority_starts_first() -> None:
    policy = policy_of(1)
    submit(policy, job(1), job(2, priority=31), job(3))
    assert started(policy) == [2]


def test_fifo_within_a_priority() -> None:
    policy = policy_of(2)
    submit(policy, job(3, t_submit=3.0), job(1, t_submit=1.0), job(2, t_submit=2.0))
    assert started(policy) == [1, 2]


def test_blocked_head_stops_later_jobs_without_reservation() -> None:
    policy = policy_of(4)
    submit(policy, job(1, 3), job(2, 2), job(3, 1))
    assert started(policy) == [1]  # 2 blocks; 3 would fit but 1 never ends: no backfill
    result = policy.schedule(NOW)
    assert not result.allocated
    assert not result.annotations


def test_free_lets_the_head_start() -> None:
    policy = policy_of(2)
    submit(policy, job(1, 2), job(2, 2))
    assert started(policy) == [1]
    policy.pool.free(1)
    assert started(policy) == [2]
    assert len(policy.queue) == 0


# --- EASY backfill ------------------------------------------------------------------------


def test_short_job_backfills_before_the_reservation() -> None:
    policy = policy_of(4)
    submit(policy, job(1, 3, duration=100.0))
    assert started(policy) == [1]
    submit(policy, job(2, 2, duration=10.0), job(3, 1, duration=50.0))
    result = policy.schedule(NOW)
    assert [j.id for j, _ in result.allocated] == [3]  # ends at +50, before +100
    head = policy.queue.get(2)
    assert head is not None
    assert head.sent == {"reason_pending": REASON_BLOCKED, "t_estimate": NOW + 100}


def test_backfill_never_delays_the_head_job() -> None:
    policy = policy_of(4)
    submit(policy, job(1, 3, duration=100.0))
    assert started(policy) == [1]
    # head needs 4 cores at +100; a 1-core job running past +100 would delay it
    submit(policy, job(2, 4, duration=10.0), job(3, 1, duration=500.0), job(4, 1))
    assert started(policy) == []
    assert {j.id for j in policy.queue} == {2, 3, 4}
    blocked = policy.queue.get(3)
    assert blocked is not None
    assert blocked.sent == {"reason_pending": REASON_BLOCKED}


def test_long_job_may_use_what_the_reservation_does_not_need() -> None:
    policy = policy_of(8)
    submit(policy, job(1, 4, duration=100.0), job(2, 2))
    assert started(policy) == [1, 2]
    # head needs 4 at +100 (job 1's cores); 2 cores are spare for a job that never ends
    submit(policy, job(3, 4), job(4, 2), job(5, 1))
    assert started(policy) == [4]
    assert started(policy) == []  # the reservation's cores stay free for job 3
    policy.pool.free(1)
    assert started(policy) == [3]


def test_job_without_duration_running_blocks_backfill_past_the_head() -> None:
    policy = policy_of(4)
    submit(policy, job(1, 2), job(2, 1, duration=60.0))
    assert started(policy) == [1, 2]
    submit(policy, job(3, 3, duration=10.0), job(4, 1, duration=1.0))
    # job 1 has no expiration and holds what job 3 needs: no reservation, no backfill
    assert started(policy) == []
    head = policy.queue.get(3)
    assert head is not None
    assert "t_estimate" not in head.sent


def test_backfill_depth_bounds_the_jobs_looked_at() -> None:
    policy = policy_of(4, depth=2)
    submit(policy, job(1, 3, duration=100.0))
    assert started(policy) == [1]
    submit(policy, job(2, 4, duration=1.0), job(3, 2, duration=1.0), job(4, 2, duration=1.0))
    submit(policy, job(5, 1, duration=1.0))
    assert started(policy) == []  # 5 fits, but lies past the depth
    last = policy.queue.get(5)
    assert last is not None
    assert not last.sent


def test_zero_depth_disables_backfill() -> None:
    policy = policy_of(4, depth=0)
    submit(policy, job(1, 3, duration=100.0), job(2, 2, duration=1.0), job(3, 1, duration=1.0))
    assert started(policy) == [1]


def test_gpu_jobs_queue_and_backfill_on_cores() -> None:
    policy = policy_of(4, gpus=1)
    submit(policy, job(1, 1, gpus=1, duration=100.0))
    assert started(policy) == [1]
    submit(policy, job(2, 1, gpus=1), job(3, 2, duration=500.0))
    # job 3 never touches the GPU the reservation needs, nor the reserved core
    assert started(policy) == [3]


# --- annotations -------------------------------------------------------------------------


def test_t_estimate_moves_to_the_new_head() -> None:
    policy = policy_of(2)
    submit(policy, job(1, 2, duration=100.0))
    assert started(policy) == [1]
    submit(policy, job(2, 2))
    policy.schedule(NOW)
    old = policy.queue.get(2)
    assert old is not None
    assert old.sent["t_estimate"] == NOW + 100
    submit(policy, job(3, 2, priority=31))
    result = policy.schedule(NOW)
    new = policy.queue.get(3)
    assert new is not None
    # the reason moves too: nothing looked at the old head (no core free to backfill on)
    assert result.annotations[old] == {"reason_pending": None, "t_estimate": None}
    assert result.annotations[new] == {"reason_pending": REASON_BLOCKED, "t_estimate": NOW + 100}
    assert "reason_pending" not in old.sent


def test_reason_pending_stays_on_jobs_found_blocked_behind_the_head() -> None:
    policy = policy_of(3)
    submit(policy, job(1, 2, duration=100.0))
    assert started(policy) == [1]
    submit(policy, job(2, 3), job(3, 2))  # 3 cannot backfill: it would end after 1
    result = policy.schedule(NOW)
    assert {j.id: a for j, a in result.annotations.items()} == {
        2: {"reason_pending": REASON_BLOCKED, "t_estimate": NOW + 100},
        3: {"reason_pending": REASON_BLOCKED},
    }
    assert policy.queue.reprioritize(3, 31)
    result = policy.schedule(NOW)
    # 3, now the head, keeps its reason; 2, behind it, is looked at and still blocked
    assert {j.id: a for j, a in result.annotations.items()} == {
        2: {"t_estimate": None},
        3: {"t_estimate": NOW + 100},
    }


def test_cancel_of_the_estimated_job() -> None:
    policy = policy_of(1)
    submit(policy, job(1, 1, duration=5.0), job(2))
    assert started(policy) == [1]
    canceled = policy.cancel(2)
    assert canceled is not None
    assert canceled.sent
    assert policy.cancel(2) is None
    submit(policy, job(3))
    result = policy.schedule(NOW)
    assert [j.id for j in result.annotations] == [3]


def test_negative_depth_is_refused() -> None:
    with pytest.raises(ValueError, match="depth"):
        policy_of(1, depth=-1)


# --- properties ---------------------------------------------------------------------------

JOBS = st.lists(
    st.tuples(
        st.integers(1, 4),  # cores
        st.integers(0, 3),  # priority
        st.sampled_from([0.0, 5.0, 20.0, 60.0]),  # duration
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=100, deadline=None)
@given(jobs=JOBS, depth=st.integers(0, 8))
def test_simulated_run_never_delays_the_head_past_its_estimate(
    jobs: list[tuple[int, int, float]], depth: int
) -> None:
    """Run jobs to their expirations; every job starts, in order unless backfilled safely.

    Whenever a head job gets an estimate, it must start no later than that.
    """
    policy = policy_of(4, depth=depth)
    for jobid, (cores, priority, duration) in enumerate(jobs):
        policy.queue.add(job(jobid, cores, priority=priority, t_submit=0.0, duration=duration))
    now = NOW
    running: dict[int, float] = {}
    promised: dict[int, float] = {}
    start: dict[int, float] = {}
    for _ in range(10 * len(jobs)):
        result = policy.schedule(now)
        for j, r in result.allocated:
            start[j.id] = now
            # no duration: let it run 30 s (unknown to the scheduler)
            running[j.id] = r.expiration or now + 30.0
        for j, changes in result.annotations.items():
            if changes.get("t_estimate") is not None:
                promised.setdefault(j.id, changes["t_estimate"])
        if not running:
            break
        now = min(running.values())
        for jobid in [i for i, end in running.items() if end <= now]:
            del running[jobid]
            policy.pool.free(jobid)
    assert len(start) == len(jobs)
    assert len(policy.queue) == 0
    for jobid, when in promised.items():
        # a promise holds when every job ended by its expiration (all with durations did)
        if all(d for _, _, d in jobs):
            assert start[jobid] <= when


# --- a pass that allocates nothing, and the jobs that cannot change that ----------------

RUNNING = st.lists(
    st.tuples(st.integers(1, 4), st.sampled_from([0.0, 5.0, 20.0, 60.0])), max_size=6
)
WAITING = st.lists(
    st.tuples(st.integers(1, 6), st.integers(1, 3), st.sampled_from([0.0, 3.0, 10.0, 100.0])),
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(
    running=RUNNING,
    waiting=WAITING,
    newcomers=WAITING,
    depth=st.integers(0, 4),
    later=st.floats(0, 50),
)
def test_closed_passes_stay_closed_to_jobs_queued_behind(
    running: list[tuple[int, float]],
    waiting: list[tuple[int, int, float]],
    newcomers: list[tuple[int, int, float]],
    depth: int,
    later: float,
) -> None:
    """After a pass that backfills nothing, jobs of at most ``closed`` priority change
    nothing: the next pass, later, allocates nothing (the simulator skips it)."""
    policy = policy_of(8, depth=depth)
    for jobid, (cores, duration) in enumerate(running, 1000):
        request = ResourceRequest(1, cores, duration=duration)
        policy.pool.alloc(jobid, request, NOW)  # some do not fit: fine
    jobid = 0
    for cores, priority, duration in waiting:
        jobid += 1
        submit(policy, job(jobid, cores, priority=priority, duration=duration))
    first = policy.schedule(NOW)
    if first.closed < 0:
        return
    for cores, priority, duration in newcomers:
        jobid += 1
        if priority <= first.closed:
            submit(policy, job(jobid, cores, priority=priority, duration=duration))
    assert policy.schedule(NOW + later).allocated == []


def test_closed_names_the_last_job_a_pass_looked_at() -> None:
    policy = policy_of(4, depth=1)
    policy.pool.alloc(100, ResourceRequest(1, 3, duration=50.0), NOW)
    submit(policy, job(1, 4, priority=20), job(2, 2, priority=18), job(3, 1, priority=17))
    result = policy.schedule(NOW)  # job 2 does not fit; job 3 is beyond the window
    assert result.allocated == []
    assert result.closed == 18
    full = policy_of(2)
    full.pool.alloc(100, ResourceRequest(1, 2), NOW)
    submit(full, job(1))
    assert full.schedule(NOW).closed == 4294967295  # nothing free: nothing starts
    roomy = policy_of(4)
    roomy.pool.alloc(100, ResourceRequest(1, 3, duration=50.0), NOW)
    submit(roomy, job(1, 4), job(2, 2))
    assert roomy.schedule(NOW).closed == -1  # room in the window: a newcomer might fit
