"""R version 1 (RFC 20): parsing rules, canonical form, building, queries and set algebra."""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.errors import ResourceError
from pflux.spec.idset import MAX_ID, IdSet
from pflux.spec.resource import ResourceSet, Target


def example() -> dict[str, Any]:
    return {
        "version": 1,
        "execution": {
            "R_lite": [{"rank": "0-3", "children": {"core": "0-47", "gpu": "0-7"}}],
            "nodelist": ["node[0-3]"],
            "starttime": 1676560542.0,
            "expiration": 1676562342.0,
            "properties": {"foo": "0-1"},
        },
        "scheduling": {},
    }


def ids(text: str) -> IdSet:
    return IdSet.decode(text)


# parsing


def test_parse_example() -> None:
    rs = ResourceSet.from_json(example())
    assert rs.ranks() == ids("0-3")
    assert rs.nnodes == 4
    assert rs.nodelist == ("node0", "node1", "node2", "node3")
    assert rs.cores(2) == ids("0-47")
    assert rs.gpus(2) == ids("0-7")
    assert rs.ncores() == 4 * 48
    assert rs.ngpus() == 4 * 8
    assert rs.ncores(1) == 48
    assert rs.ngpus(3) == 8
    assert rs.starttime == 1676560542.0
    assert rs.expiration == 1676562342.0
    assert rs.properties == {"foo": ids("0-1")}
    assert rs.scheduling == {}
    assert rs.nslots == 0
    assert rs.targets[0] == Target("node0", ids("0-47"), ids("0-7"))
    assert rs


def test_parse_rfc20_example() -> None:
    """data/spec_20/example1.json in flux-framework/rfc: integer times, nslots, no scheduling."""
    doc = {
        "version": 1,
        "execution": {
            "R_lite": [{"rank": "19-22", "children": {"core": "0-47", "gpu": "0-7"}}],
            "nodelist": ["node[186-189]"],
            "nslots": 32,
            "starttime": 1676560542,
            "expiration": 1676562342,
        },
    }
    rs = ResourceSet.from_json(doc)
    assert rs.ranks() == ids("19-22")
    assert rs.nodelist == ("node186", "node187", "node188", "node189")
    assert rs.nslots == 32
    assert rs.scheduling is None
    out = rs.to_json()
    assert out["execution"]["nslots"] == 32
    assert out["execution"]["starttime"] == 1676560542.0
    assert "scheduling" not in out
    assert ResourceSet.from_json(out) == rs


def test_hostnames_follow_sorted_ranks_across_entries() -> None:
    doc = {
        "version": 1,
        "execution": {
            "R_lite": [
                {"rank": "2-3", "children": {"core": "0-1"}},
                {"rank": "0,4", "children": {"core": "0"}},
                {"rank": "1", "children": {"core": "0", "gpu": "0"}},
            ],
            "nodelist": ["a", "b[1-2]", "c,d"],
        },
    }
    rs = ResourceSet.from_json(doc)
    assert list(rs.targets) == [0, 1, 2, 3, 4]
    assert rs.nodelist == ("a", "b1", "b2", "c", "d")
    assert rs.cores(2) == ids("0-1")
    assert rs.gpus(1) == ids("0")
    assert rs.gpus(0) == IdSet()


def test_optional_keys_and_defaults() -> None:
    doc = {
        "version": 1,
        "execution": {"R_lite": [{"rank": "0", "children": {"core": ""}}], "nodelist": ["h"]},
    }
    doc["execution"]["R_lite"][0]["children"]["gpu"] = "0"  # type: ignore[index]
    rs = ResourceSet.from_json(doc)
    assert (rs.starttime, rs.expiration, rs.nslots, rs.properties) == (0.0, 0.0, 0, {})
    assert rs.cores(0) == IdSet()
    assert rs.gpus(0) == ids("0")


def test_unset_times_are_zero() -> None:
    for start, end in [(0, 10.5), (10.5, 0), (0, 0), (1, 2)]:
        doc = example()
        doc["execution"]["starttime"] = start
        doc["execution"]["expiration"] = end
        rs = ResourceSet.from_json(doc)
        assert (rs.starttime, rs.expiration) == (float(start), float(end))


def test_empty_property_is_dropped() -> None:
    doc = example()
    doc["execution"]["properties"] = {"foo": "", "bar": "3"}
    assert ResourceSet.from_json(doc).properties == {"bar": ids("3")}


def test_scheduling_is_kept_as_given() -> None:
    doc = example()
    doc["scheduling"] = {"writer": "fluxion", "graph": {"nodes": [1, {"x": None}]}}
    rs = ResourceSet.from_json(doc)
    assert rs.scheduling == doc["scheduling"]
    assert rs.to_json()["scheduling"] == doc["scheduling"]


def test_allow_empty() -> None:
    for nodelist in ([], [""]):
        doc = {"version": 1, "execution": {"R_lite": [], "nodelist": nodelist}}
        rs = ResourceSet.from_json(doc, allow_empty=True)
        assert not rs
        assert rs.nnodes == 0
        assert rs.summary() == ""
        with pytest.raises(ResourceError, match="must name at least one execution target"):
            ResourceSet.from_json(doc)
    empty = ResourceSet.build({}, [])
    assert ResourceSet.from_json(empty.to_json(), allow_empty=True) == empty


Mutator = Callable[[dict[str, Any]], object]


def setter(path: str, value: object) -> Mutator:
    """Set (or, with value DELETE, remove) a dotted path in an R document."""

    def mutate(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = doc
        for key in parents:
            node = node[int(key)] if key.isdigit() else node[key]
        if value is DELETE:
            del node[last]
        elif last.isdigit():
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


DELETE = object()
RL = "execution.R_lite.0"


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.clear() or d.update(x=1), "x: unknown key"),
        (setter("attributes", {}), "attributes: unknown key"),
        (setter("version", DELETE), "version: required key is missing"),
        (setter("version", 2), "version: unsupported R version 2 (only 1 is defined)"),
        (setter("version", True), "version: unsupported R version True"),
        (setter("version", 1.0), "version: unsupported R version 1.0"),
        (setter("version", "1"), "version: unsupported R version '1'"),
        (setter("execution", DELETE), "execution: required key is missing"),
        (setter("execution", []), "execution: must be an object, not array"),
        (setter("execution.bogus", 1), "execution.bogus: unknown key"),
        (setter("execution.R_lite", DELETE), "execution.R_lite: required key is missing"),
        (setter("execution.R_lite", {}), "execution.R_lite: must be an array, not object"),
        (setter("execution.R_lite", []), "execution.R_lite: must name at least one execution"),
        (setter(RL, "0-3"), "execution.R_lite[0]: must be an object, not string"),
        (setter(f"{RL}.node", "h"), "execution.R_lite[0].node: unknown key"),
        (setter(f"{RL}.rank", DELETE), "execution.R_lite[0].rank: required key is missing"),
        (setter(f"{RL}.rank", 0), "execution.R_lite[0].rank: must be an idset string, not integer"),
        (setter(f"{RL}.rank", "3-0"), 'execution.R_lite[0].rank: invalid idset "3-0": range'),
        (setter(f"{RL}.rank", ""), "execution.R_lite[0].rank: names no execution target"),
        (setter(f"{RL}.children", DELETE), "execution.R_lite[0].children: required key is"),
        (setter(f"{RL}.children", "0"), "execution.R_lite[0].children: must be an object"),
        (setter(f"{RL}.children.core", DELETE), "children.core: required key is missing"),
        (
            setter(f"{RL}.children.core", "3-1"),
            'execution.R_lite[0].children.core: invalid idset "3-1"',
        ),
        (setter(f"{RL}.children.core", None), "children.core: must be an idset string, not null"),
        (setter(f"{RL}.children.gpu", "01"), 'children.gpu: invalid idset "01": leading zero'),
        (setter(f"{RL}.children.memory", "0"), "children.memory: unknown resource type"),
        (
            lambda d: d["execution"]["R_lite"][0].update(children={"core": "", "gpu": ""}),
            "execution.R_lite[0].children: holds no cores or gpus",
        ),
        (
            lambda d: d["execution"]["R_lite"].append({"rank": "3-4", "children": {"core": "0"}}),
            "execution.R_lite[1].rank: rank 3 already appears in an earlier entry",
        ),
        (setter("execution.nodelist", DELETE), "execution.nodelist: required key is missing"),
        (setter("execution.nodelist", "node[0-3]"), "execution.nodelist: must be an array"),
        (setter("execution.nodelist.0", 7), "execution.nodelist[0]: must be a hostlist string"),
        (
            setter("execution.nodelist.0", "node[0-3"),
            'execution.nodelist[0]: invalid hostlist "node[0-3": unbalanced brackets',
        ),
        (setter("execution.nodelist.0", "node[0-2]"), "names 3 hosts for 4 execution targets"),
        (setter("execution.nodelist.0", "n[0-9]"), "names more than 4 hosts for 4 execution"),
        (setter("execution.nslots", 0), "execution.nslots: must be an integer of at least 1"),
        (setter("execution.nslots", -3), "execution.nslots: must be an integer"),
        (setter("execution.nslots", 2.0), "execution.nslots: must be an integer"),
        (setter("execution.nslots", True), "execution.nslots: must be an integer"),
        (setter("execution.starttime", -1), "execution.starttime: must be a non-negative"),
        (setter("execution.starttime", "1"), "execution.starttime: must be a number, not string"),
        (setter("execution.starttime", None), "execution.starttime: must be a number, not null"),
        (setter("execution.starttime", True), "execution.starttime: must be a number, not bool"),
        (setter("execution.starttime", math.nan), "execution.starttime: must be a non-negative"),
        (setter("execution.expiration", math.inf), "execution.expiration: must be a non-neg"),
        (setter("execution.expiration", 10**400), "execution.expiration: is out of range"),
        (setter("execution.expiration", 1676560542), "execution.expiration: must be later than"),
        (setter("execution.expiration", 1.0), "execution.expiration: must be later than"),
        (setter("execution.properties", []), "execution.properties: must be an object"),
        (setter("execution.properties.foo", 1), "execution.properties.foo: must be an idset"),
        (setter("execution.properties.foo", "1-0"), 'properties.foo: invalid idset "1-0"'),
        (
            setter("execution.properties.foo", "2-9"),
            "execution.properties.foo: ranks 4-9 are not execution targets of this R",
        ),
        (setter("execution.properties.a|b", "0"), "invalid character '|' in property name"),
        (setter("execution.properties.!x", "0"), "invalid character '!' in property name"),
        (setter("execution.properties.", "0"), "property name must be a non-empty string"),
        (setter("scheduling", []), "scheduling: must be an object, not array"),
        (setter("scheduling", None), "scheduling: must be an object, not null"),
    ],
)
def test_from_json_rules(mutate: Mutator, message: str) -> None:
    doc = example()
    mutate(doc)
    with pytest.raises(ResourceError) as info:
        ResourceSet.from_json(doc)
    assert message in str(info.value)


@pytest.mark.parametrize("doc", [None, [], "R", 1, b"{}"])
def test_from_json_not_an_object(doc: object) -> None:
    with pytest.raises(ResourceError, match="R must be a JSON object"):
        ResourceSet.from_json(doc)


def test_accepted_property_names() -> None:
    doc = example()
    doc["execution"]["properties"] = {"amd-mi50@gpu": "0", "+queue": "1-3", "x86_64": "0-3"}
    rs = ResourceSet.from_json(doc)
    assert rs.properties == {"+queue": ids("1-3"), "amd-mi50@gpu": ids("0"), "x86_64": ids("0-3")}


def test_too_many_targets_rejected_before_expanding() -> None:
    doc = example()
    doc["execution"]["R_lite"][0]["rank"] = "0-2147483647"
    with pytest.raises(ResourceError, match="names more than 1048576 execution targets"):
        ResourceSet.from_json(doc)


# canonical form


def test_to_json_canonical_form() -> None:
    rs = ResourceSet.build(
        {
            0: (ids("0-1"), IdSet()),
            1: (ids("0-1"), IdSet()),
            2: (ids("0-3"), ids("0")),
            3: (ids("0-1"), IdSet()),
        },
        ["node0", "node1", "node2", "node3"],
        starttime=10.0,
        expiration=20.0,
        nslots=4,
        properties={"b": ids("3"), "a": ids("0-1")},
        scheduling={"writer": "pflux"},
    )
    doc = rs.to_json()
    assert doc == {
        "version": 1,
        "execution": {
            "R_lite": [
                {"rank": "0-1,3", "children": {"core": "0-1"}},
                {"rank": "2", "children": {"core": "0-3", "gpu": "0"}},
            ],
            "nodelist": ["node[0-3]"],
            "nslots": 4,
            "starttime": 10.0,
            "expiration": 20.0,
            "properties": {"a": "0-1", "b": "3"},
        },
        "scheduling": {"writer": "pflux"},
    }
    assert list(doc) == ["version", "execution", "scheduling"]
    assert list(doc["execution"]) == [
        "R_lite",
        "nodelist",
        "nslots",
        "starttime",
        "expiration",
        "properties",
    ]
    assert ResourceSet.from_json(json.loads(json.dumps(doc))) == rs


def test_to_json_compresses_the_example() -> None:
    doc = example()
    doc["execution"]["R_lite"] = [
        {"rank": str(r), "children": {"core": "0-47", "gpu": "0-7"}} for r in range(4)
    ]
    doc["execution"]["nodelist"] = ["node0", "node1", "node2", "node3"]
    assert ResourceSet.from_json(doc).to_json() == example()


def test_summary() -> None:
    assert ResourceSet.build({0: (ids("0"), IdSet())}, "h").summary() == "rank0/core0"
    four = ResourceSet.build({r: (ids("0-3"), IdSet()) for r in range(4)}, "h[0-3]")
    assert four.summary() == "rank[0-3]/core[0-3]"
    mixed = ResourceSet.build(
        {0: (ids("0-1"), ids("0")), 1: (ids("0-1"), ids("0")), 2: (ids("5"), IdSet())},
        "h[0-2]",
    )
    assert mixed.summary() == "rank[0-1]/core[0-1],gpu0 rank2/core5"
    gpu_only = ResourceSet.build({0: (IdSet(), ids("0-1"))}, "h")
    assert gpu_only.summary() == "rank0/gpu[0-1]"


# building


def test_build_signature_for_a_scheduler() -> None:
    rs = ResourceSet.build({0: (ids("0-1"), IdSet())}, ["node0"])
    assert rs.to_json()["execution"]["R_lite"] == [{"rank": "0", "children": {"core": "0-1"}}]
    assert rs.to_json()["execution"]["nodelist"] == ["node0"]
    assert "nslots" not in rs.to_json()["execution"]
    assert ResourceSet.build({5: (ids("0"), IdSet()), 2: (ids("1"), IdSet())}, "n[2,5]").nodelist
    timed = ResourceSet.build({0: (ids("0"), IdSet())}, ["node0"], 10.0, 20.0)
    assert (timed.starttime, timed.expiration) == (10.0, 20.0)
    reordered = ResourceSet.build({5: (ids("0"), IdSet()), 2: (ids("1"), IdSet())}, "n[2,5]")
    assert list(reordered.targets) == [2, 5]
    assert reordered.targets[5].hostname == "n5"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"children": []}, "children: must map ranks"),
        ({"children": {-1: (IdSet(), ids("0"))}}, "children: rank -1 is not an integer"),
        ({"children": {True: (ids("0"), IdSet())}}, "children: rank True is not an integer"),
        ({"children": {"0": (ids("0"), IdSet())}}, "children: rank '0' is not an integer"),
        ({"children": {MAX_ID + 1: (ids("0"), IdSet())}}, "is not an integer in 0-2147483647"),
        ({"children": {0: ids("0")}}, "children[0]: must be a (cores, gpus) pair of IdSets"),
        ({"children": {0: ("0", "")}}, "children[0]: must be a (cores, gpus) pair of IdSets"),
        ({"children": {0: (IdSet(), IdSet())}}, "children[0]: holds no cores or gpus"),
        ({"nodelist": ["a", "b"]}, "nodelist: names more than 1 hosts for 1 execution targets"),
        ({"nodelist": []}, "nodelist: names 0 hosts for 1 execution targets"),
        ({"nodelist": ["a["]}, 'nodelist[0]: invalid hostlist "a["'),
        ({"nodelist": [1]}, "nodelist[0]: must be a hostlist string, not integer"),
        ({"nodelist": 5}, "nodelist: must be a hostlist or a sequence of hostnames"),
        ({"starttime": -1.0}, "starttime: must be a non-negative number"),
        ({"starttime": 5.0, "expiration": 5.0}, "expiration: must be later than starttime"),
        ({"nslots": -1}, "nslots: must be an integer of at least 0"),
        ({"properties": {"x": ids("1")}}, "properties.x: ranks 1 are not execution targets"),
        ({"properties": {"x": "0"}}, "properties.x: must be an IdSet, not string"),
        ({"properties": {"a(b": ids("0")}}, "invalid character '(' in property name"),
        ({"properties": [("x", ids("0"))]}, "properties: must map names to IdSets"),
        ({"scheduling": [1]}, "scheduling: must be an object, not array"),
    ],
)
def test_build_rules(kwargs: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {"children": {0: (ids("0"), IdSet())}, "nodelist": ["h"]} | kwargs
    with pytest.raises(ResourceError) as info:
        ResourceSet.build(**args)
    assert message in str(info.value)


def test_build_drops_empty_properties_and_sorts_names() -> None:
    rs = ResourceSet.build(
        {0: (ids("0"), IdSet())}, "h", properties={"z": ids("0"), "a": ids("0"), "e": IdSet()}
    )
    assert list(rs.properties) == ["a", "z"]


def test_with_times() -> None:
    rs = ResourceSet.from_json(example())
    moved = rs.with_times(100.0, 200.5)
    assert (moved.starttime, moved.expiration) == (100.0, 200.5)
    assert moved.targets == rs.targets
    assert moved.properties == rs.properties
    assert rs.with_times(0, 0).expiration == 0.0
    with pytest.raises(ResourceError, match="expiration: must be later than starttime"):
        rs.with_times(200.0, 100.0)
    with pytest.raises(ResourceError, match="starttime: must be a number"):
        rs.with_times("now", 0)  # type: ignore[arg-type]


def test_queries_on_absent_rank() -> None:
    rs = ResourceSet.from_json(example())
    assert rs.cores(9) == IdSet()
    assert rs.gpus(9) == IdSet()
    assert rs.ncores(9) == 0
    assert rs.ngpus(9) == 0


# set algebra


def rset(spec: dict[int, tuple[str, str]], **kwargs: Any) -> ResourceSet:
    return ResourceSet.build(
        {r: (ids(c), ids(g)) for r, (c, g) in spec.items()},
        [f"n{r}" for r in sorted(spec)],
        **kwargs,
    )


def test_union() -> None:
    a = rset({0: ("0-1", ""), 2: ("0", "")}, starttime=5.0, nslots=2, properties={"p": ids("0")})
    b = rset({0: ("2-3", "0"), 1: ("0", "")}, properties={"p": ids("1"), "q": ids("0")})
    u = a | b
    assert list(u.targets) == [0, 1, 2]
    assert u.cores(0) == ids("0-3")
    assert u.gpus(0) == ids("0")
    assert u.nodelist == ("n0", "n1", "n2")
    assert u.properties == {"p": ids("0-1"), "q": ids("0")}
    assert u.starttime == 5.0
    assert u.nslots == 0
    assert a.union(b) == u


def test_union_hostname_conflict() -> None:
    a = ResourceSet.build({0: (ids("0"), IdSet())}, "alpha")
    b = ResourceSet.build({0: (ids("1"), IdSet())}, "beta")
    with pytest.raises(ResourceError, match="rank 0: host 'alpha' conflicts with 'beta'"):
        a.union(b)


def test_difference_and_intersection() -> None:
    pool = rset({0: ("0-3", "0-1"), 1: ("0-3", "")}, properties={"big": ids("0-1")})
    job = rset({0: ("0-3", ""), 1: ("0-1", "")})
    free = pool - job
    assert list(free.targets) == [0, 1]
    assert free.cores(0) == IdSet()
    assert free.gpus(0) == ids("0-1")
    assert free.cores(1) == ids("2-3")
    assert free.properties == {"big": ids("0-1")}
    rest = free - rset({0: ("", "0-1")})
    assert list(rest.targets) == [1]
    assert rest.properties == {"big": ids("1")}
    assert (pool & job) == rset({0: ("0-3", ""), 1: ("0-1", "")}, properties={"big": ids("0-1")})
    assert not (job & rset({2: ("0", "")}))
    assert pool.difference(job) == free
    assert pool.intersection(job) == pool & job


def test_disjoint_and_subset() -> None:
    pool = rset({0: ("0-3", "0"), 1: ("0-3", "")})
    job = rset({0: ("0-1", "")})
    other = rset({0: ("2-3", ""), 1: ("0", "")})
    assert job.issubset(pool)
    assert not pool.issubset(job)
    assert job.is_disjoint(other)
    assert not other.is_disjoint(pool)
    assert not rset({2: ("0", "")}).issubset(pool)
    assert rset({0: ("", "0")}).issubset(pool)
    assert not rset({0: ("", "0")}).is_disjoint(pool)


def test_operators_reject_other_types() -> None:
    rs = ResourceSet.from_json(example())
    assert rs.__or__(1) is NotImplemented
    assert rs.__and__(1) is NotImplemented
    assert rs.__sub__(1) is NotImplemented


# properties

RANKS = st.integers(0, 12)
CORES = st.sets(st.integers(0, 9), max_size=6)


@st.composite
def models(draw: st.DrawFn) -> dict[int, tuple[set[int], set[int]]]:
    """{rank: (cores, gpus)} with at least one core or gpu per rank."""
    spec = draw(st.dictionaries(RANKS, st.tuples(CORES, st.sets(st.integers(0, 3), max_size=3))))
    return {r: (c, g) for r, (c, g) in spec.items() if c or g}


def from_model(model: dict[int, tuple[set[int], set[int]]]) -> ResourceSet:
    children = {r: (IdSet(c), IdSet(g)) for r, (c, g) in model.items()}
    return ResourceSet.build(children, [f"node{r:02d}" for r in sorted(model)])


def as_model(rs: ResourceSet) -> dict[int, tuple[set[int], set[int]]]:
    return {r: (set(t.cores), set(t.gpus)) for r, t in rs.targets.items()}


@st.composite
def resource_sets(draw: st.DrawFn) -> ResourceSet:
    model = draw(models().filter(bool))
    ranks = sorted(model)
    start = draw(st.sampled_from([0.0, 1676560542.25]))
    end = draw(st.sampled_from([0.0, 1676562342.5]))
    names = st.sampled_from(["a", "b@gpu", "+q"])
    props = draw(st.dictionaries(names, st.sets(st.sampled_from(ranks))))
    return ResourceSet.build(
        {r: (IdSet(c), IdSet(g)) for r, (c, g) in model.items()},
        draw(st.sampled_from([[f"n{r}" for r in ranks], [f"h{i:03d}" for i in range(len(ranks))]])),
        starttime=start,
        expiration=end,
        nslots=draw(st.integers(0, 64)),
        properties={name: IdSet(rs) for name, rs in props.items()},
        scheduling=draw(st.sampled_from([None, {}, {"writer": "x", "n": [1, 2]}])),
    )


@settings(max_examples=200)
@given(resource_sets())
def test_round_trip(rs: ResourceSet) -> None:
    doc = rs.to_json()
    assert ResourceSet.from_json(doc) == rs
    assert ResourceSet.from_json(json.loads(json.dumps(doc))) == rs
    assert ResourceSet.from_json(doc).to_json() == doc
    assert len(doc["execution"]["R_lite"]) == len({(t.cores, t.gpus) for t in rs.targets.values()})


@given(resource_sets())
def test_summary_describes_each_r_lite_entry(rs: ResourceSet) -> None:
    """summary() is flux's rlist_dumps of R: per entry, ids bracketed when more than one."""
    doc, summary = rs.encode()
    assert doc == rs.to_json()
    assert summary == rs.summary()
    parts = []
    for entry in doc["execution"]["R_lite"]:
        children = entry["children"]
        kinds = [
            f"{kind}{ids(children[name]).encode(brackets=True)}"
            for kind, name in (("core", "core"), ("gpu", "gpu"))
            if children.get(name)
        ]
        parts.append(f"rank{ids(entry['rank']).encode(brackets=True)}/{','.join(kinds)}")
    assert summary == " ".join(parts)


def model_union(a: dict[int, Any], b: dict[int, Any]) -> dict[int, Any]:
    out = {r: (set(c), set(g)) for r, (c, g) in a.items()}
    for r, (c, g) in b.items():
        mine = out.setdefault(r, (set(), set()))
        mine[0].update(c)
        mine[1].update(g)
    return out


Model = dict[int, tuple[set[int], set[int]]]


def model_combine(a: Model, b: Model, op: Callable[[set[int], set[int]], set[int]]) -> Model:
    out = {}
    for r, (c, g) in a.items():
        oc, og = b.get(r, (set(), set()))
        cores, gpus = op(c, oc), op(g, og)
        if cores or gpus:
            out[r] = (cores, gpus)
    return out


@settings(max_examples=200)
@given(models(), models())
def test_algebra_agrees_with_a_per_rank_model(a: dict[int, Any], b: dict[int, Any]) -> None:
    x, y = from_model(a), from_model(b)
    assert as_model(x | y) == model_union(a, b)
    assert list((x | y).targets) == sorted(model_union(a, b))
    assert as_model(x - y) == model_combine(a, b, set.difference)
    assert as_model(x & y) == model_combine(a, b, set.intersection)
    assert x.issubset(y) == (not model_combine(a, b, set.difference))
    assert x.is_disjoint(y) == (not model_combine(a, b, set.intersection))
    assert ((x - y) | (x & y)) == x
    assert (x - y).is_disjoint(y)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _outcome(doc: Any) -> ResourceSet | ResourceError:
    """What from_json returns, or the ResourceError it raises; anything else escapes and fails."""
    try:
        return ResourceSet.from_json(doc)
    except ResourceError as err:
        return err


@settings(max_examples=300)
@given(JSON)
def test_fuzz_arbitrary_json(doc: Any) -> None:
    result = _outcome(doc)
    assert isinstance(result, ResourceSet | ResourceError)


def _leaf_paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    paths = [path]
    if isinstance(node, dict):
        for key, value in node.items():
            paths += _leaf_paths(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            paths += _leaf_paths(value, (*path, i))
    return paths


@settings(max_examples=300)
@given(st.data())
def test_fuzz_mutated_documents(data: st.DataObject) -> None:
    """Replace one part of a valid R with arbitrary JSON: only ResourceError may come out."""
    doc = copy.deepcopy(example())
    doc["execution"]["R_lite"].append({"rank": "4", "children": {"core": "0"}})
    doc["execution"]["nodelist"].append("extra")
    path = data.draw(st.sampled_from(_leaf_paths(doc)[1:]))
    value = data.draw(JSON | st.sampled_from(["", "0", "0-3", "4", "n[0-4]", "[]", "5-9"]))
    node: Any = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    result = _outcome(doc)
    if isinstance(result, ResourceError):
        assert ": " in str(result)  # path: rule
        return
    assert ResourceSet.from_json(result.to_json()) == result
