"""flux.hostlist and flux.idset: flux-core's expected values, and encodings checked
against pflux's own (``pflux.spec.hostlist``, ``pflux.spec.idset``) with hypothesis.
The package is loaded from its directory for this module only, and unloaded after."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.spec import hostlist, idset
from support.shim import SHIM_PYTHON


@pytest.fixture(scope="module")
def flux() -> Iterator[Any]:
    sys.path.insert(0, str(SHIM_PYTHON))
    try:
        yield SimpleNamespace(
            hostlist=importlib.import_module("flux.hostlist"),
            idset=importlib.import_module("flux.idset"),
        )
    finally:
        sys.path.remove(str(SHIM_PYTHON))
        for name in [m for m in sys.modules if m == "flux" or m.startswith("flux.")]:
            del sys.modules[name]


def test_idset_encodings_with_flux_flags(flux: Any) -> None:
    m = flux.idset
    cases = [
        ("", None, ""),
        ("0,1", None, "0-1"),
        ("0-10", m.IDSET_FLAG_RANGE | m.IDSET_FLAG_BRACKETS, "[0-10]"),
        ("0-3", m.IDSET_FLAG_BRACKETS, "[0,1,2,3]"),
        ("0-3", 0, "0,1,2,3"),
        ("5", m.IDSET_FLAG_BRACKETS, "5"),
    ]
    for text, flags, expected in cases:
        ids = m.decode(text)
        if flags is not None:
            ids.set_flags(flags)
        assert str(ids) == expected
        assert repr(ids) == f"IDset('{m.decode(expected)}')"


def test_idset_decodes_as_libidset_unordered_repeated_and_bracketed(flux: Any) -> None:
    assert str(flux.idset.decode("5,3-1,3")) == "1-3,5"
    assert str(flux.idset.decode("[99-101]")) == "99-101"
    assert str(flux.idset.IDset([3, 1, 2])) == "1-3"
    assert str(flux.idset.IDset(7)) == "7"
    for bad in ("foo", "1,,2", "1-", "-1", "1-2-3", str(2**32)):
        with pytest.raises(ValueError, match="IDset\\(\\): Invalid argument"):
            flux.idset.decode(bad)
    with pytest.raises(TypeError):
        flux.idset.IDset(1.5)


def test_idset_set_clear_index_and_walk(flux: Any) -> None:
    m = flux.idset
    ids = m.decode("0-9")
    ids[10] = True
    ids[21] = 1
    ids[5] = False
    assert str(ids) == "0-4,6-10,21"
    assert (ids.first(), ids.last(), ids.next(4), ids.next(10), ids.next(21)) == (
        0,
        21,
        6,
        21,
        m.IDSET_INVALID_ID,
    )
    assert m.IDset().first() == m.IDSET_INVALID_ID
    assert str(m.IDset().set(3, 7).clear(4, 5)) == "3,6-7"
    assert list(m.decode("0-3,7")) == [0, 1, 2, 3, 7] == m.decode("0-3,7").expand()
    assert (len(ids), ids.count(), 21 in ids, 5 in ids) == (11, 11, True, False)
    for call, exc in (
        (lambda: ids["a"], TypeError),
        (lambda: ids[-1], ValueError),
        (lambda: -1 in ids, ValueError),
        (lambda: ids.set(5, 1), ValueError),
        (lambda: ids.clear(1, -1), ValueError),
        (lambda: ids.next("a"), TypeError),
        (lambda: ids.equal("0-3"), TypeError),
        (lambda: ids == "0-3", TypeError),
        (lambda: ids.add(42), TypeError),
        (lambda: ids.subtract("foo"), ValueError),
    ):
        with pytest.raises(exc):
            call()
    with pytest.raises(TypeError):
        ids[0] = 7


def test_idset_set_operations_and_copies(flux: Any) -> None:
    m = flux.idset
    ids = m.decode("0-9")
    assert str(ids.add("10-11").add([20, 21])) == "0-11,20-21"
    assert str(ids.subtract("11-20")) == "0-10,21"
    assert str(m.decode("0-10").intersect("0-5", m.decode("0-3"))) == "0-3"
    assert str(m.decode("0-10").union("5-15", "0-3")) == "0-15"
    assert str(m.decode("0-10").difference("2-3", [9])) == "0-1,4-8,10"
    a = m.decode("0-5")
    assert (str(a + "8"), str(a | "8"), str(a - "1"), str(a & "4-9")) == ("0-5,8",) * 2 + (
        "0,2-5",
        "4-5",
    )
    copy = a.copy()
    copy.clear(1, 5)
    assert (str(copy), str(a)) == ("0", "0-5")
    a += "9"
    a -= "0"
    assert str(a) == "1-5,9"


idsets = st.sets(st.integers(0, 2000), max_size=60)


@settings(max_examples=300)
@given(ids=idsets, other=idsets)
def test_idset_encoding_and_algebra_match_pflux(flux: Any, ids: set[int], other: set[int]) -> None:
    m = flux.idset
    ours = idset.IdSet(ids)
    theirs = m.IDset(ids)
    assert str(theirs) == ours.encode()
    assert theirs.encode(m.IDSET_FLAG_RANGE | m.IDSET_FLAG_BRACKETS) == ours.encode(brackets=True)
    assert theirs.encode(0) == ",".join(map(str, sorted(ids)))
    assert m.decode(ours.encode(brackets=True)).expand() == sorted(ids)
    b = idset.IdSet(other)
    assert str(theirs.union(other)) == (ours | b).encode()
    assert str(theirs.intersect(m.IDset(other))) == (ours & b).encode()
    assert str(theirs.difference(b.encode())) == (ours - b).encode()
    assert len(theirs) == len(ours)
    walked = []
    i = theirs.first()
    while i != m.IDSET_INVALID_ID:
        walked.append(i)
        i = theirs.next(i)
    assert walked == sorted(ids)


def test_hostlist_decode_encode_and_refusals(flux: Any) -> None:
    m = flux.hostlist
    assert str(m.decode(["foo1", "foo2"])) == "foo[1-2]"
    assert str(m.decode({"foo2", "foo1"}).sort()) == "foo[1-2]"
    for text, expected in (("", ""), ("foo0,foo1", "foo[0-1]"), ("foo0,bar1", "foo0,bar1")):
        assert str(m.decode(text)) == expected
        assert repr(m.decode(text)) == f"Hostlist('{expected}')"
    for bad in ("[]", "foo[]", "foo[", "foo[1,3", "foo[[1,3]", "foo]", "foo[x-y]", "foo[0-1,2--5]"):
        with pytest.raises(ValueError, match="Invalid hostlist"):
            m.decode(bad)
    for bad_arg in (42, 1.0, ["foo", 42]):
        with pytest.raises(TypeError):
            m.decode(bad_arg)


def test_hostlist_index_append_delete_sort_uniq_copy(flux: Any) -> None:
    m = flux.hostlist
    hl = m.decode("foo[0-9]")
    assert (hl[0], hl[9], hl[-2], list(hl[1:3]), len(hl), hl.count()) == (
        "foo0",
        "foo9",
        "foo8",
        ["foo1", "foo2"],
        10,
        10,
    )
    assert ("foo5" in hl, "foo10" in hl, "foo" in hl) == (True, False, False)
    assert list(hl) == hl.expand()
    assert (hl.find("foo3"), hl.index("foo[7,2]"), hl.index("foo1,bar", ignore_nomatch=True)) == (
        3,
        [7, 2],
        [1],
    )
    with pytest.raises(FileNotFoundError, match="host 'bar' not found"):
        hl.find("bar")
    with pytest.raises(FileNotFoundError, match="hosts 'bar,baz' not found"):
        hl.index("foo1,bar,baz")
    with pytest.raises(IndexError):
        hl[10]
    with pytest.raises(TypeError):
        hl["a"]
    hl = m.decode("")
    assert (hl.append("foo[0-3]"), hl.append("foo[7-9]"), hl.append(m.decode("foo1,bar"))) == (
        4,
        3,
        2,
    )
    hl.append(["bar0", "bar1"])
    assert str(hl) == "foo[0-3,7-9,1],bar,bar[0-1]"
    with pytest.raises(TypeError):
        hl.append(42)
    hl = m.decode("foo[0-10]")
    assert (hl.delete("foo5"), hl.delete("foo1,foo3")) == (1, 2)
    assert hl.delete(m.decode("foo[6-7]")) == 2
    assert str(hl) == "foo[0,2,4,8-10]"
    assert str(m.decode("foo[7,6,5,4,3,2,1]").sort()) == "foo[1-7]"
    assert str(m.decode("foo[1-7,1-7,1-7]").uniq()) == "foo[1-7]"
    copy = hl.copy()
    hl.delete("foo[0-10]")
    assert (str(copy), str(hl)) == ("foo[0,2,4,8-10]", "")


hostnames = st.lists(
    st.builds(
        lambda prefix, n, pad: f"{prefix}{n:0{pad}d}",
        st.sampled_from(["node", "gpu", "x", "r1n"]),
        st.integers(0, 120),
        st.sampled_from([1, 2, 3]),
    )
    | st.sampled_from(["login", "fe-a", "foo1-eth0"]),
    max_size=30,
)


@settings(max_examples=300)
@given(hosts=hostnames)
def test_hostlist_encodes_as_pflux_and_decodes_back(flux: Any, hosts: list[str]) -> None:
    text = flux.hostlist.Hostlist(hosts).encode()
    assert text == hostlist.encode(hosts)
    assert flux.hostlist.decode(text).expand() == hosts
    assert hostlist.decode(text) == hosts


def test_hostlist_slices_and_index_lists_are_hostlists(flux: Any) -> None:
    hl = flux.hostlist.Hostlist("foo[0-9]")
    assert repr(hl[8:]) == "Hostlist('foo[8-9]')"
    assert str(hl[1:3]) == "foo[1-2]"
    assert str(hl[1, 3]) == "foo[1,3]"
    assert str(hl[flux.idset.IDset("0,5-6")]) == "foo[0,5-6]"
    with pytest.raises(TypeError, match="Invalid Hostlist index 'x'"):
        hl[[1, "x"]]
    with pytest.raises(IndexError, match="Hostlist index out of range"):
        hl[[10]]
