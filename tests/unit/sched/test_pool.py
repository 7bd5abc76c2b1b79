"""The resource pool: requests from jobspecs, allocation, frees, adoption, reservations."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.errors import JobspecError, ResourceError
from pflux.sched.pool import Pool, ResourceRequest
from pflux.spec.builder import from_command
from pflux.spec.idset import IdSet
from pflux.spec.resource import ResourceSet, Target

NOW = 1_700_000_000.0


def node(cores: int, gpus: int = 0, rank: int = 0, host: str = "node0") -> dict[int, Target]:
    coreset = IdSet.range(0, cores - 1) if cores else IdSet()
    gpuset = IdSet.range(0, gpus - 1) if gpus else IdSet()
    return {rank: Target(host, coreset, gpuset)}


def pool_of(*ranks: tuple[int, int]) -> Pool:
    """A pool with one (cores, gpus) entry per rank, hosts node0, node1, ..."""
    targets: dict[int, Target] = {}
    for rank, (cores, gpus) in enumerate(ranks):
        targets.update(node(cores, gpus, rank, f"node{rank}"))
    return Pool(ResourceSet(targets))


def req(nslots: int = 1, cores: int = 1, gpus: int = 0, **kw: object) -> ResourceRequest:
    return ResourceRequest(nslots, cores, gpus, **kw)  # type: ignore[arg-type]


# --- requests from jobspecs -----------------------------------------------------------


def test_request_from_simple_jobspec() -> None:
    spec = from_command(["true"], num_tasks=4, cores_per_task=2, duration=60)
    assert ResourceRequest.from_jobspec(spec) == ResourceRequest(4, 2, 0, 0, False, 60.0)


def test_request_from_node_level_jobspec() -> None:
    spec = from_command(["true"], num_tasks=4, num_nodes=2, gpus_per_task=1, exclusive=True)
    assert ResourceRequest.from_jobspec(spec) == ResourceRequest(4, 1, 1, 2, True, 0.0)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda s: s.pop("resources"),
        lambda s: s["resources"][0].update(count="four"),
        lambda s: s["attributes"]["system"].update(duration=-1),
        lambda s: s["resources"][0]["with"][0].update(count=0),
    ],
)
def test_malformed_jobspec_raises_jobspec_error(mutate: object) -> None:
    spec = from_command(["true"])
    mutate(spec)  # type: ignore[operator]
    with pytest.raises(JobspecError):
        ResourceRequest.from_jobspec(spec)


@pytest.mark.parametrize("data", [None, 3, "text", [], {"resources": "x"}])
def test_non_jobspecs_raise_jobspec_error(data: object) -> None:
    with pytest.raises(JobspecError):
        ResourceRequest.from_jobspec(data)


# --- allocation ---------------------------------------------------------------------


def test_alloc_takes_lowest_free_ids_and_sets_times() -> None:
    pool = pool_of((4, 0))
    r1 = pool.alloc(1, req(2, duration=30.0), NOW)
    r2 = pool.alloc(2, req(1), NOW)
    assert r1 is not None
    assert r2 is not None
    assert r1.cores(0) == IdSet.range(0, 1)
    assert r2.cores(0) == IdSet([2])
    assert (r1.starttime, r1.expiration, r1.nslots) == (NOW, NOW + 30, 2)
    assert r2.expiration == 0.0  # no duration, no expiration (RFC 20: 0 = unset)
    assert r1.nodelist == ("node0",)
    assert r1.summary() == "rank0/core[0-1]"
    assert pool.free_cores == 1
    assert pool.alloc(3, req(2), NOW) is None  # does not fit now
    assert 3 not in pool


def test_alloc_round_trips_through_r_json() -> None:
    pool = pool_of((4, 2))
    r = pool.alloc(1, req(2, gpus=1, duration=10.0), NOW)
    assert r is not None
    assert ResourceSet.from_json(r.to_json()) == r
    assert r.to_json()["execution"]["R_lite"] == [
        {"rank": "0", "children": {"core": "0-1", "gpu": "0-1"}}
    ]


def test_gpus_limit_slots() -> None:
    pool = pool_of((8, 2))
    assert pool.alloc(1, req(3, gpus=1), NOW) is None
    r = pool.alloc(1, req(2, gpus=1), NOW)
    assert r is not None
    assert r.gpus(0) == IdSet.range(0, 1)
    assert pool.alloc(2, req(1, gpus=1), NOW) is None
    assert pool.alloc(3, req(6), NOW) is not None  # cores are still free


def test_slots_spread_over_ranks_worst_fit_first() -> None:
    pool = pool_of((2, 0), (4, 0))
    r = pool.alloc(1, req(5), NOW)
    assert r is not None
    assert r.ranks() == IdSet([0, 1])
    assert r.cores(1) == IdSet.range(0, 3)
    assert r.cores(0) == IdSet([0])
    assert r.nodelist == ("node0", "node1")


def test_slot_never_splits_across_ranks() -> None:
    pool = pool_of((3, 0), (3, 0))
    assert pool.alloc(1, req(3, cores=2), NOW) is None  # 6 cores free, but only 2 slots of 2
    assert pool.unsatisfiable(req(3, cores=2)) is not None


def test_node_level_request_takes_per_node_slots() -> None:
    pool = pool_of((4, 0), (4, 0))
    pool.alloc(9, req(1), NOW)
    r = pool.alloc(1, req(4, cores=1, nnodes=2), NOW)
    assert r is not None
    assert r.nnodes == 2
    assert r.ncores() == 4
    assert r.nslots == 4


def test_exclusive_takes_whole_free_nodes_only() -> None:
    pool = pool_of((4, 2))
    exclusive = req(1, nnodes=1, exclusive=True)
    r = pool.alloc(1, exclusive, NOW)
    assert r is not None
    assert r.cores(0) == IdSet.range(0, 3)
    assert r.gpus(0) == IdSet.range(0, 1)
    pool.free(1)
    pool.alloc(2, req(1), NOW)
    assert pool.alloc(3, exclusive, NOW) is None  # the node is partly used
    pool.free(2)
    assert pool.alloc(3, exclusive, NOW) is not None


def test_alloc_twice_for_one_job_is_an_error() -> None:
    pool = pool_of((4, 0))
    pool.alloc(1, req(1), NOW)
    with pytest.raises(ResourceError, match="already holds resources"):
        pool.alloc(1, req(1), NOW)


def test_avoid_keeps_off_named_resources() -> None:
    pool = pool_of((4, 0))
    avoid = {0: (IdSet.range(0, 2), IdSet())}
    r = pool.alloc(1, req(1), NOW, avoid=avoid)
    assert r is not None
    assert r.cores(0) == IdSet([3])
    assert pool.alloc(2, req(1), NOW, avoid=avoid) is None


def test_tiny_duration_still_expires_after_start() -> None:
    pool = pool_of((1, 0))
    r = pool.alloc(1, req(1, duration=1e-300), NOW)
    assert r is not None
    assert r.expiration > r.starttime


# --- unsatisfiable requests ------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_", "note"),
    [
        (
            req(5),
            "unsatisfiable request: need 5 slot(s) of 1 core(s), only 4 such slot(s)"
            " available (total cores: 4)",
        ),
        (
            req(1, gpus=3),
            "unsatisfiable request: need 1 slot(s) with 3 GPU(s) each, only 0 available"
            " (total GPUs: 2)",
        ),
        (
            req(2, nnodes=2),
            "unsatisfiable request: need 2 node(s) with 1 cores each, only 1 eligible",
        ),
        (
            req(2, gpus=1, nnodes=2),
            "unsatisfiable request: need 2 node(s) with 1 cores and 1 GPUs each, only 1 eligible",
        ),
        (
            req(2, nnodes=2, exclusive=True),
            "unsatisfiable request: need 2 exclusive node(s), only 1 eligible",
        ),
    ],
)
def test_unsatisfiable_notes_use_flux_wording(request_: ResourceRequest, note: str) -> None:
    assert pool_of((4, 2)).unsatisfiable(request_) == note


def test_satisfiable_requests_have_no_note() -> None:
    pool = pool_of((4, 2))
    for request in (req(4), req(2, gpus=1), req(4, nnodes=1), req(1, nnodes=1, exclusive=True)):
        assert pool.unsatisfiable(request) is None


def test_empty_pool_denies_everything() -> None:
    pool = Pool(ResourceSet({}))
    assert pool.unsatisfiable(req(1)) is not None
    assert pool.alloc(1, req(1), NOW) is None


# --- free ----------------------------------------------------------------------------


def test_free_restores_and_rejects_foreign_resources() -> None:
    pool = pool_of((4, 0))
    r = pool.alloc(1, req(2), NOW)
    assert r is not None
    other = ResourceSet(node(4)).difference(r)
    with pytest.raises(ResourceError, match=r"does not hold rank 0 core\[2-3\]"):
        pool.free(1, other)
    assert pool.free_cores == 2  # nothing changed
    pool.free(1, r)
    assert pool.free_cores == 4
    assert 1 not in pool
    with pytest.raises(ResourceError, match="holds no resources"):
        pool.free(1, r)


def test_partial_free_keeps_the_rest() -> None:
    pool = pool_of((2, 0), (2, 0))
    r = pool.alloc(1, req(4), NOW)
    assert r is not None
    rank1 = ResourceSet({1: r.targets[1]})
    pool.free(1, rank1, final=False)
    assert pool.free_cores == 2
    assert pool.held(1).ranks() == IdSet([0])
    pool.free(1, ResourceSet({0: r.targets[0]}), final=True)
    assert pool.free_cores == 4
    assert len(pool) == 0


def test_allocated_and_available_views() -> None:
    pool = pool_of((4, 1))
    pool.alloc(1, req(1, gpus=1), NOW)
    assert pool.allocated().summary() == "rank0/core0,gpu0"
    assert pool.available().summary() == "rank0/core[1-3]"


# --- adoption after a restart ------------------------------------------------------------


def test_adopt_marks_r_allocated() -> None:
    pool = pool_of((4, 0))
    r = ResourceSet(node(2), starttime=NOW, expiration=NOW + 5)
    assert not pool.adopt(7, r)
    assert pool.free_cores == 2
    assert pool.expiration(7) == NOW + 5
    assert pool.alloc(8, req(3), NOW) is None


def test_adopt_returns_what_does_not_fit_and_free_accepts_it() -> None:
    pool = pool_of((2, 0))
    r = ResourceSet(node(4, host="elsewhere"))
    lost = pool.adopt(7, r)
    assert lost.cores(0) == IdSet.range(2, 3)
    assert pool.free_cores == 0
    pool.free(7, r)  # a damaged job's free may name what it never got here
    assert pool.free_cores == 2


def test_adopt_of_unreadable_r_holds_nothing() -> None:
    pool = pool_of((2, 0))
    assert not pool.adopt(7, None)
    assert 7 in pool
    assert pool.free_cores == 2
    pool.free(7, ResourceSet(node(2)))
    assert 7 not in pool
    assert pool.free_cores == 2


def test_adopt_overlap_is_lost() -> None:
    pool = pool_of((4, 0))
    pool.adopt(1, ResourceSet(node(2)))
    lost = pool.adopt(2, ResourceSet(node(3)))
    assert lost.summary() == "rank0/core[0-1]"


# --- reservations ---------------------------------------------------------------------


def test_reservation_is_the_earliest_expiration_that_frees_enough() -> None:
    pool = pool_of((4, 0))
    pool.alloc(1, req(2, duration=100.0), NOW)
    pool.alloc(2, req(1, duration=50.0), NOW)
    pool.alloc(3, req(1, duration=200.0), NOW)
    reservation = pool.reservation(req(3))
    assert reservation is not None
    assert reservation.time == NOW + 100
    assert reservation.resources == {0: (IdSet.range(0, 2), IdSet())}


def test_no_reservation_when_a_job_never_ends() -> None:
    pool = pool_of((4, 0))
    pool.alloc(1, req(3), NOW)  # no duration
    pool.alloc(2, req(1, duration=10.0), NOW)
    assert pool.reservation(req(2)) is None
    assert pool.reservation(req(1)) is not None


def test_set_expiration_moves_the_reservation() -> None:
    pool = pool_of((2, 0))
    pool.alloc(1, req(2), NOW)
    assert pool.reservation(req(1)) is None
    pool.set_expiration(1, NOW + 42)
    reservation = pool.reservation(req(1))
    assert reservation is not None
    assert reservation.time == NOW + 42
    pool.set_expiration(1, 0.0)
    assert pool.reservation(req(1)) is None


# --- properties -------------------------------------------------------------------------

POOL_SHAPES = st.lists(st.tuples(st.integers(0, 6), st.integers(0, 3)), min_size=1, max_size=3)
REQUESTS = st.builds(
    ResourceRequest,
    nslots=st.integers(1, 6),
    cores_per_slot=st.integers(1, 3),
    gpus_per_slot=st.integers(0, 2),
    nnodes=st.integers(0, 2),
    exclusive=st.booleans(),
    duration=st.sampled_from([0.0, 10.0]),
)
STEPS = st.lists(st.tuples(st.booleans(), REQUESTS, st.integers(0, 30)), max_size=40)


def _node_level_fits(request: ResourceRequest) -> ResourceRequest:
    """Keep generated node-level requests well formed: nslots a multiple of nnodes."""
    if request.nnodes:
        return request._replace(nslots=request.nnodes * max(1, request.nslots // request.nnodes))
    return request._replace(exclusive=False)


@settings(max_examples=150, deadline=None)
@given(shape=POOL_SHAPES, steps=STEPS)
def test_random_allocs_and_frees_keep_the_pool_consistent(
    shape: list[tuple[int, int]], steps: list[tuple[bool, ResourceRequest, int]]
) -> None:
    shape = [(c, g) if c or g else (1, g) for c, g in shape]
    pool = pool_of(*shape)
    everything = pool.all
    granted: dict[int, ResourceSet] = {}
    for jobid, (do_alloc, generated, pick) in enumerate(steps):
        if do_alloc or not granted:
            request = _node_level_fits(generated)
            r = pool.alloc(jobid, request, NOW)
            if r is None:
                continue
            assert r.issubset(everything)
            for other in granted.values():
                assert r.is_disjoint(other)
            assert r.ncores() >= request.nslots * request.cores_per_slot
            assert r.ngpus() >= request.nslots * request.gpus_per_slot
            granted[jobid] = r
        else:
            victim = sorted(granted)[pick % len(granted)]
            pool.free(victim, granted.pop(victim))
        used = ResourceSet({})
        for r in granted.values():
            used = used | r
        assert pool.allocated() == used.with_times(0.0, 0.0)
        assert pool.free_cores == everything.ncores() - used.ncores()
        assert pool.free_gpus == everything.ngpus() - used.ngpus()
    for jobid in list(granted):
        pool.free(jobid, granted.pop(jobid))
    assert pool.available() == everything
    assert pool.free_cores == everything.ncores()
    assert len(pool) == 0


def _reference_reservation(pool: Pool, request: ResourceRequest) -> tuple[float, object] | None:
    """The reservation as first written: rebuild the free sets at each expiration, then try."""
    jobs = pool._jobs
    ending = sorted((held.expiration, jobid) for jobid, held in jobs.items() if held.expiration)
    free = dict(pool._free)
    for i, (when, jobid) in enumerate(ending):
        for rank, (cores, gpus) in jobs[jobid].ranks.items():
            free[rank] = (free[rank][0] | cores, free[rank][1] | gpus)
        if i + 1 < len(ending) and ending[i + 1][0] == when:
            continue
        order = sorted((-len(c), -len(g), rank) for rank, (c, g) in free.items())
        chosen = pool._select(request, free, order)
        if chosen is not None:
            return when, chosen
    return None


@settings(max_examples=150, deadline=None)
@given(
    shape=POOL_SHAPES,
    steps=st.lists(
        st.tuples(st.integers(0, 2), REQUESTS, st.integers(0, 30), st.integers(1, 4)), max_size=30
    ),
    wanted=REQUESTS,
)
def test_kept_order_and_reservations_match_recomputing_them(
    shape: list[tuple[int, int]],
    steps: list[tuple[int, ResourceRequest, int, int]],
    wanted: ResourceRequest,
) -> None:
    """The worst-fit order and counts kept as the pool changes, and the counted reservation,
    are what computing them afresh gives, through allocs, partial and final frees."""
    shape = [(c, g) if c or g else (1, g) for c, g in shape]
    pool = pool_of(*shape)
    granted: dict[int, ResourceSet] = {}
    for jobid, (action, generated, pick, ends) in enumerate(steps):
        if action == 0 or not granted:
            r = pool.alloc(jobid, _node_level_fits(generated), NOW)
            if r is not None:
                granted[jobid] = r
                pool.set_expiration(jobid, NOW + ends)  # ties in expirations too
        else:
            victim = sorted(granted)[pick % len(granted)]
            held = granted[victim]
            if action == 1 and len(held.targets) > 1:  # give one rank back early
                rank = min(held.targets)
                pool.free(victim, ResourceSet({rank: held.targets[rank]}), final=False)
                granted[victim] = ResourceSet({k: t for k, t in held.targets.items() if k != rank})
            else:
                pool.free(victim)
                del granted[victim]
        counts = {rank: (len(c), len(g)) for rank, (c, g) in pool._free.items()}
        assert pool._counts == counts
        assert pool._by_fit == sorted((-c, -g, rank) for rank, (c, g) in counts.items())
        request = _node_level_fits(wanted)
        got = pool.reservation(request)
        expected = _reference_reservation(pool, request)
        assert (got.time, dict(got.resources)) == expected if got else expected is None


REQUESTS = st.builds(
    ResourceRequest,
    st.integers(1, 9),
    st.integers(1, 4),
    st.integers(0, 2),
    st.integers(0, 3),
    st.booleans(),
    st.sampled_from([0.0, 0, 1.5, 3600.0]),
)


@given(REQUESTS)
def test_a_request_s_shape_is_it_without_its_duration(wanted: ResourceRequest) -> None:
    shape = wanted.shape
    assert type(shape) is ResourceRequest
    assert shape == wanted._replace(duration=0.0)
    assert shape.duration == 0.0


# --- drained ranks ------------------------------------------------------------------------


def test_a_drained_rank_offers_nothing_and_keeps_what_its_jobs_free_aside() -> None:
    pool = pool_of((4, 0), (4, 0))
    held = pool.alloc(1, req(1, 2, nnodes=1), NOW)
    assert held is not None
    rank = next(iter(held.targets))
    other = 1 - rank
    pool.drain(rank)
    assert pool.drained == frozenset({rank})
    assert pool.busy(rank)
    assert pool.available().ranks() == IdSet([other])
    assert pool.alloc(2, req(1, 4, nnodes=1), NOW) is not None  # the other rank
    assert pool.alloc(3, req(1, 1), NOW) is None  # the drained rank's 2 free cores stay aside
    pool.free(1)
    assert not pool.busy(rank)
    assert pool.allocated().ranks() == IdSet([other])  # what was set aside is not "allocated"
    assert pool.alloc(3, req(1, 1), NOW) is None
    pool.undrain(rank)
    got = pool.alloc(3, req(1, 4), NOW)
    assert got is not None
    assert got.ranks() == IdSet([rank])


def test_a_reservation_does_not_count_on_a_drained_rank() -> None:
    pool = pool_of((2, 0), (2, 0))
    assert pool.alloc(1, req(1, 2, nnodes=1, duration=10), NOW) is not None
    assert pool.alloc(2, req(1, 2, nnodes=1, duration=20), NOW) is not None
    first = pool.reservation(req(1, 2))
    assert first is not None
    assert first.time == NOW + 10
    ending_first = next(iter(pool.held(1).targets))
    pool.drain(ending_first)
    later = pool.reservation(req(1, 2))
    assert later is not None
    assert later.time == NOW + 20
    assert set(later.resources) == {1 - ending_first}


# --- ranks joining, down and up -----------------------------------------------------------


def test_a_rank_joining_grows_the_pool_and_its_cores_are_allocated() -> None:
    pool = Pool(ResourceSet(node(2)), size=2)
    assert pool.alloc(1, req(1, 2, nnodes=2), NOW) is None
    pool.add(1, Target("node1", IdSet.range(0, 3), IdSet([0])))
    assert pool.all.nodelist == ("node0", "node1")
    assert (pool.free_cores, pool.free_gpus) == (6, 1)
    got = pool.alloc(1, req(2, 2, nnodes=2), NOW)
    assert got is not None
    assert got.ranks() == IdSet([0, 1])
    with pytest.raises(ResourceError, match="rank 1 is already in the pool"):
        pool.add(1, Target("node1", IdSet([0]), IdSet()))


def test_ranks_yet_to_join_bound_only_the_node_count() -> None:
    pool = Pool(ResourceSet(node(2)), size=3)
    assert pool.unsatisfiable(req(3, 2, nnodes=3)) is None  # the others may have 2 cores
    assert pool.unsatisfiable(req(100, 1)) is None  # nobody knows their cores yet
    assert pool.unsatisfiable(req(4, 1, nnodes=4)) == (
        "unsatisfiable request: need 4 node(s) with 1 cores each, only 3 eligible"
    )
    pool.add(1, Target("node1", IdSet([0]), IdSet()))
    pool.add(2, Target("node2", IdSet([0]), IdSet()))
    assert pool.unsatisfiable(req(3, 2, nnodes=3)) == (
        "unsatisfiable request: need 3 node(s) with 2 cores each, only 1 eligible"
    )
    assert pool.unsatisfiable(req(100, 1)) is not None


def test_a_down_rank_offers_nothing_until_up_and_not_drained() -> None:
    pool = pool_of((4, 0), (4, 0))
    held = pool.alloc(1, req(1, 2, nnodes=1), NOW)
    assert held is not None
    rank = next(iter(held.targets))
    pool.set_down(rank)
    assert pool.available().ranks() == IdSet([1 - rank])
    assert pool.alloc(2, req(2, 1, nnodes=2), NOW) is None
    pool.free(1)  # the job's cores go back aside, not to the pool
    assert pool.allocated().ranks() == IdSet()
    assert pool.alloc(2, req(2, 1, nnodes=2), NOW) is None
    pool.drain(rank)
    pool.set_up(rank)  # still drained
    assert pool.alloc(2, req(2, 1, nnodes=2), NOW) is None
    pool.undrain(rank)
    got = pool.alloc(2, req(2, 4, nnodes=2), NOW)  # every core of both ranks
    assert got is not None
    assert got.ranks() == IdSet([0, 1])


def test_a_rank_down_or_drained_before_it_joins_stays_aside() -> None:
    pool = Pool(ResourceSet(node(2)), size=2)
    pool.drain(1)
    pool.add(1, Target("node1", IdSet.range(0, 3), IdSet()))
    assert pool.available().ranks() == IdSet([0])
    assert pool.free_cores == 2
    pool.undrain(1)
    assert pool.free_cores == 6


def test_adopt_takes_a_running_job_back_on_a_down_rank() -> None:
    pool = pool_of((4, 0), (4, 0))
    pool.set_down(1)
    running = ResourceSet({**node(2, rank=0), **node(2, rank=1, host="node1")})
    assert not pool.adopt(7, running)
    assert pool.held(7).ranks() == IdSet([0, 1])
    pool.set_up(1)
    assert pool.free_cores == 4  # two on each rank
    pool.free(7)
    assert pool.free_cores == 8


def test_adopt_holds_a_job_on_a_rank_yet_to_join_until_it_does() -> None:
    pool = Pool(ResourceSet(node(2)), size=3)
    running = ResourceSet(
        {**node(1, rank=0), 1: Target("node1", IdSet([1]), IdSet()), **node(1, 0, 2, "node2")}
    )
    assert not pool.adopt(7, running)
    other = ResourceSet({1: Target("node1", IdSet([2]), IdSet())})
    assert not pool.adopt(8, other)  # a second job on the same rank
    assert pool.adopt(9, ResourceSet(node(1, rank=5, host="node5")))  # not a rank here
    assert pool.held(7).nodelist == ("node0", "node1", "node2")
    pool.free(8)  # before rank 1 joined: nothing to give back yet
    pool.add(1, Target("node1", IdSet.range(0, 3), IdSet()))
    assert pool.free_cores == 1  # rank 1 is down until it is up
    pool.set_up(1)
    assert pool.free_cores == 1 + 3  # all but the core job 7 holds
    assert pool.alloc(10, req(4, 1, nnodes=1), NOW) is None
    pool.free(7)
    assert pool.free_cores == 2 + 4


# --- placement on the ranks a job's constraints allow ---------------------------------------


def test_a_request_with_ranks_is_placed_on_those_only() -> None:
    pool = pool_of((4, 0), (2, 0), (2, 0))  # worst fit alone would pick rank 0
    only = frozenset({1, 2})
    got = pool.alloc(1, req(3, ranks=only), NOW)
    assert got is not None
    assert set(got.targets) == {1, 2}
    assert pool.alloc(2, req(2, ranks=only), NOW) is None  # rank 0's cores are not for it
    assert pool.alloc(3, req(1, ranks=frozenset({0}), nnodes=1), NOW) is not None
    assert pool.alloc(4, req(1, ranks=frozenset({1}), nnodes=1, exclusive=True), NOW) is None


def test_unsatisfiable_counts_only_the_allowed_ranks() -> None:
    pool = pool_of((4, 0), (2, 0), (2, 0))
    assert pool.unsatisfiable(req(4, ranks=frozenset({1, 2}))) is None
    assert "only 4 such slot(s)" in (pool.unsatisfiable(req(5, ranks=frozenset({1, 2}))) or "")
    assert "only 2 eligible" in (
        pool.unsatisfiable(req(3, nnodes=3, ranks=frozenset({1, 2}))) or ""
    )
    assert pool.unsatisfiable(req(5)) is None


def test_a_reservation_for_ranks_waits_for_those_ranks() -> None:
    pool = pool_of((2, 0), (2, 0))
    assert pool.alloc(1, req(2, ranks=frozenset({0}), duration=100.0), NOW) is not None
    assert pool.alloc(2, req(2, ranks=frozenset({1}), duration=50.0), NOW) is not None
    reservation = pool.reservation(req(1, ranks=frozenset({0})))
    assert reservation is not None
    assert reservation.time == NOW + 100.0  # rank 1's job ends sooner, and does not count
    assert set(reservation.resources) == {0}
