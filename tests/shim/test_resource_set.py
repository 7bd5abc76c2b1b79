"""flux.resource.ResourceSet: flux-core's expected values, and R encodings and set
operations checked against pflux's own (``pflux.spec.resource``) with hypothesis. The
package is loaded from its directory for this module only, and unloaded after."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.spec.idset import IdSet
from pflux.spec.resource import ResourceSet as PfluxResourceSet
from support.shim import SHIM_PYTHON

R_INPUT = {
    "version": 1,
    "execution": {
        "R_lite": [{"rank": "0-3", "children": {"core": "0-3", "gpu": "0"}}],
        "starttime": 0,
        "expiration": 0,
        "nodelist": ["fluke[0-3]"],
    },
}


@pytest.fixture(scope="module")
def resource() -> Iterator[Any]:
    sys.path.insert(0, str(SHIM_PYTHON))
    try:
        yield importlib.import_module("flux.resource")
    finally:
        sys.path.remove(str(SHIM_PYTHON))
        for name in [m for m in sys.modules if m == "flux" or m.startswith("flux.")]:
            del sys.modules[name]


def test_a_set_from_text_or_dict_counts_and_names_its_resources(resource: Any) -> None:
    for arg in (json.dumps(R_INPUT), R_INPUT):
        rset = resource.ResourceSet(arg)
        assert str(rset) == rset.rlist == "rank[0-3]/core[0-3],gpu0"
        assert (rset.nnodes, rset.ncores, rset.ngpus, rset.count("core")) == (4, 16, 4, 16)
        assert (type(rset.nodelist).__name__, str(rset.nodelist)) == ("Hostlist", "fluke[0-3]")
        assert (type(rset.ranks).__name__, str(rset.ranks)) == ("IDset", "0-3")
    empty = resource.ResourceSet()
    assert (str(empty), empty.nnodes, empty.ncores, empty.ngpus, empty.state) == ("", 0, 0, 0, None)
    built = resource.ResourceSet(resource.Rlist().add_rank(0, "h", "0-1").add_child(0, "gpu", "0"))
    assert str(built) == "rank0/core[0-1],gpu0"


def test_a_set_refuses_what_flux_refuses(resource: Any) -> None:
    for arg, exc in (
        ((1, 2), TypeError),
        ("", ValueError),
        ({"version": 199}, ValueError),
        (json.dumps({"version": 199}), ValueError),
        ({}, KeyError),
        ("{", json.JSONDecodeError),
        ({"version": 1, "execution": {"R_lite": [{"rank": "x", "children": {}}]}}, ValueError),
    ):
        with pytest.raises(exc):
            resource.ResourceSet(arg)


def test_set_operations_copies_and_encoding(resource: Any) -> None:
    set1 = resource.ResourceSet(R_INPUT)
    set2 = set1.copy().remove_ranks("2-3")
    assert str(set1 - set2) == "rank[2-3]/core[0-3],gpu0"
    assert str((set1 - set2) | set1) == "rank[0-3]/core[0-3],gpu0"
    assert str(set1 & set2) == "rank[0-1]/core[0-3],gpu0"
    assert str(set1.copy_ranks("1")) == "rank1/core[0-3],gpu0"
    assert str(resource.ResourceSet(set1.encode())) == str(set1)
    assert set1.host_ranks("fluke[2,0]") == [2, 0]
    with pytest.raises(FileNotFoundError, match="hosts 'nohost,x' not found"):
        set1.host_ranks("nohost,x")
    assert set1.host_ranks("fluke1,nohost", ignore_nomatch=True) == [1]
    total = resource.ResourceSet()
    total.add(set1.copy_ranks("0"), set1.copy_ranks("3").encode())
    assert str(total) == "rank[0,3]/core[0-3],gpu0"
    grown = resource.ResourceSet(R_INPUT)
    grown.append(resource.Rlist().add_rank(4, "fluke4", "0-3").add_child(4, "gpu", "0"))
    assert (str(grown), str(grown.nodelist)) == ("rank[0-4]/core[0-3],gpu0", "fluke[0-4]")
    with pytest.raises(ValueError, match="append: rank 0-3 is in both sets"):
        grown.append(set1)


def test_properties_and_constraints(resource: Any) -> None:
    rset = resource.ResourceSet(R_INPUT)
    rset.set_property("xx", "0-1").set_property("zz", "2-3").set_property("aa", "1")
    for args in (("x^y",), ("yy", "0-6"), ("yy", "foo")):
        with pytest.raises(ValueError, match="set_property: "):
            rset.set_property(*args)
    assert json.loads(rset.get_properties()) == {"xx": "0-1", "zz": "2-3", "aa": "1"}
    cases = [
        ({"properties": ["foo"]}, ""),
        ({"properties": ["xx"]}, "rank[0-1]/core[0-3],gpu0"),
        ({"properties": ["zz"]}, "rank[2-3]/core[0-3],gpu0"),
        ({"properties": ["aa"]}, "rank1/core[0-3],gpu0"),
        ({"not": [{"properties": ["aa", "xx"]}]}, "rank[0,2-3]/core[0-3],gpu0"),
        ({"properties": ["^aa", "^xx"]}, "rank[2-3]/core[0-3],gpu0"),
        ({"hostlist": ["fluke[1-2]"]}, "rank[1-2]/core[0-3],gpu0"),
        ({"or": [{"ranks": ["0"]}, {"properties": ["zz"]}]}, "rank[0,2-3]/core[0-3],gpu0"),
    ]
    for constraint, expected in cases:
        assert str(rset.copy_constraint(constraint)) == expected
        assert str(rset.copy_constraint(json.dumps(constraint))) == expected
    kept = rset.copy_constraint({"properties": ["xx"]})
    assert str(kept.copy_constraint({"properties": ["aa"]})) == "rank1/core[0-3],gpu0"
    assert json.loads(kept.encode())["execution"]["properties"] == {"xx": "0-1", "aa": "1"}
    for bad in ({"foo": []}, {"properties": [42]}, {"ranks": "0"}, {"and": [{"x": []}]}):
        with pytest.raises(ValueError, match="copy_constraint"):
            resource.ResourceSet().copy_constraint(bad)


cores = st.sets(st.integers(0, 12), min_size=1, max_size=6)
gpus = st.sets(st.integers(0, 3), max_size=2)
rsets = st.dictionaries(st.integers(0, 15), st.tuples(cores, gpus), max_size=6).map(
    lambda ranks: PfluxResourceSet.build(
        {r: (IdSet(c), IdSet(g)) for r, (c, g) in ranks.items()},
        [f"node{r}" for r in sorted(ranks)],
        properties={"even": IdSet(r for r in ranks if r % 2 == 0)} if ranks else None,
    )
)


@settings(max_examples=200)
@given(a=rsets, b=rsets)
def test_r_and_set_operations_match_pflux(resource: Any, a: Any, b: Any) -> None:
    ours_a = resource.ResourceSet(a.to_json())
    ours_b = resource.ResourceSet(json.dumps(b.to_json()))
    assert PfluxResourceSet.from_json(json.loads(ours_a.encode()), allow_empty=True) == a
    assert str(ours_a) == a.summary()
    assert (ours_a.nnodes, ours_a.ncores, ours_a.ngpus) == (a.nnodes, a.ncores(), a.ngpus())
    assert str(ours_a.ranks) == a.ranks().encode()
    assert ours_a.nodelist.expand() == list(a.nodelist)
    assert str(ours_a - ours_b) == (a - b).summary()
    assert str(ours_a & ours_b) == (a & b).summary()
    if a.is_disjoint(b):
        assert str(ours_a | ours_b) == (a | b).summary()
