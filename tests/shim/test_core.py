"""``_pfluxcore``, the logic pflux and the flux package share: each module against a
plain model (hypothesis), and both faces loading the one copy of it."""

from __future__ import annotations

import importlib
import itertools
import math
import re
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from _pfluxcore import duration, fluid, hostlist, idset, update
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.spec import duration as pflux_duration
from support.shim import SHIM_PYTHON, flux_output

ids = st.integers(0, 2**64 - 1)
id_sets = st.sets(st.integers(0, 300), max_size=40)


def _ranges(members: set[int]) -> list[tuple[int, int]]:
    return idset.of_sorted(sorted(members))[0]


@settings(max_examples=300)
@given(a=id_sets, b=id_sets)
def test_idset_ranges_behave_as_python_sets(a: set[int], b: set[int]) -> None:
    ra, rb = _ranges(a), _ranges(b)
    for (got, count), model in (
        (idset.merge(ra + rb), a | b),
        (idset.intersection(ra, rb), a & b),
        (idset.difference(ra, rb), a - b),
        (idset.of_sorted(sorted(a)), a),
    ):
        assert got == _ranges(model)
        assert count == len(model)
        assert all(lo <= hi for lo, hi in got)
        assert all(hi + 1 < lo for (_, hi), (lo, _) in itertools.pairwise(got))
    assert idset.isdisjoint(ra, rb) == a.isdisjoint(b)
    for n in range(-1, 302):
        assert idset.contains(ra, n) == (n in a)
        above = [i for i in a if i >= n]
        assert idset.next_id(ra, n) == (min(above) if above else None)
    assert idset.encode(ra, runs=False) == ",".join(map(str, sorted(a)))
    text = idset.encode(ra)
    decoded: set[int] = set()
    for part in filter(None, text.split(",")):
        lo, _, hi = part.partition("-")
        decoded.update(range(int(lo), int(hi or lo) + 1))
    assert decoded == a


def test_idset_merge_takes_ranges_in_any_order_and_joins_neighbours() -> None:
    assert idset.merge([(5, 6), (0, 2), (3, 3), (9, 9), (1, 4)]) == ([(0, 6), (9, 9)], 8)
    assert idset.merge([]) == ([], 0)


hosts = st.lists(
    st.tuples(st.sampled_from(["node", "io", "n1x", "a-b"]), st.integers(0, 120), st.booleans()),
    max_size=30,
).map(lambda items: [f"{p}{n:03d}" if pad else f"{p}{n}" for p, n, pad in items])


def _expand_all(text: str) -> list[str]:
    """Expand a hostlist whose brackets hold no commas outside them (``encode``'s output)."""
    out: list[str] = []
    depth = 0
    start = 0
    pieces = []
    for i, c in enumerate(text):
        depth += c == "["
        depth -= c == "]"
        if c == "," and not depth:
            pieces.append(text[start:i])
            start = i + 1
    pieces.append(text[start:])
    for piece in filter(None, pieces):
        if "[" in piece:
            head, _, rest = piece.partition("[")
            idlist, _, suffix = rest.partition("]")
            hostlist.expand(head, idlist, suffix, out, 1 << 20)
        else:
            out.append(piece)
    return out


@settings(max_examples=300)
@given(hosts=hosts)
def test_hostlist_encoding_expands_back_to_the_hosts_in_order(hosts: list[str]) -> None:
    text = hostlist.encode(hosts)
    assert _expand_all(text) == hosts
    assert len(text) <= len(",".join(hosts))


@pytest.mark.parametrize(
    ("idlist", "reason"),
    [
        ("", "empty brackets"),
        ("1,,2", "empty element in brackets"),
        ("1-x", 'malformed range "1-x"'),
        ("5-3", 'range "5-3" descends'),
        ("0-1048576", "expands to more than 1048576 hosts"),
        ("1" * 21, f'number "{"1" * 21}" is too long'),
    ],
)
def test_hostlist_expansion_says_which_rule_an_idlist_breaks(idlist: str, reason: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(reason)}$"):
        hostlist.expand("n", idlist, "", [], 1 << 20, 20)


def test_hostlist_expansion_keeps_each_elements_padding() -> None:
    out: list[str] = []
    hostlist.expand("n", "08-10,7", "-eth0", out, 100)
    assert out == ["n08-eth0", "n09-eth0", "n10-eth0", "n7-eth0"]


@settings(max_examples=300)
@given(n=ids)
def test_fluid_every_encoding_decodes_back(n: int) -> None:
    for encode in (fluid.f58, fluid.f58plain, fluid.hex_, fluid.dothex, fluid.kvs, fluid.words):
        assert fluid.decode(encode(n)) == n
    assert fluid.decode(str(n)) == n
    assert fluid.decode("job." + str(n)) == n


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("ƒ", "f58 needs 1 to 12 base58 digits after the prefix"),
        ("ƒ0", "'0' is not a base58 digit"),
        ("0x", "0x must be followed by hex digits"),
        ("1.2.3", "dothex needs four groups, e.g. 0018.1d0d.4d85.0fbe"),
        ("a-b", "words must have the form w-w-w--w-w-w"),
        ("zz-academy-academy--academy-academy-academy", "'zz' is not a mnemonicode word"),
        (str(2**64), "larger than 64 bits"),
        ("abc", "not in dec, hex, dothex, kvs, words or f58 encoding"),
    ],
)
def test_fluid_decode_gives_the_reason_it_refuses(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(reason)}$"):
        fluid.decode(text)


@settings(max_examples=300)
@given(seconds=st.floats(0, 1e9))
def test_duration_printing_picks_the_largest_unit_at_or_above_one(seconds: float) -> None:
    text = duration.in_unit(seconds, 6)
    unit = text[-1]
    assert float(text[:-1]) == pytest.approx(seconds / duration.UNITS[unit], rel=1e-5)
    assert seconds < 60 or float(text[:-1]) >= 1
    short = duration.short(seconds)
    if seconds < 1e-3:
        assert short == "0s"
    elif seconds < 10:
        assert short == f"{seconds:.3f}s"
    else:
        assert short == duration.in_unit(seconds, 4)
    assert pflux_duration.format_short(seconds) == short


def test_duration_short_of_infinity() -> None:
    assert duration.short(math.inf) == "inf"
    assert pflux_duration.format_short(math.inf) == "inf"


@pytest.fixture(scope="module")
def flux_util() -> Iterator[Any]:
    sys.path.insert(0, str(SHIM_PYTHON))
    try:
        yield importlib.import_module("flux.util")
    finally:
        sys.path.remove(str(SHIM_PYTHON))
        for name in [m for m in sys.modules if m == "flux" or m.startswith("flux.")]:
            del sys.modules[name]


@settings(max_examples=300)
@given(seconds=st.floats(0, 1e9) | st.just(math.inf))
def test_flux_util_fsd_prints_as_pflux_jobs_does(flux_util: Any, seconds: float) -> None:
    assert flux_util.fsd(seconds) == pflux_duration.format_short(seconds)


def test_both_faces_load_the_one_copy() -> None:
    """The flux package finds the core on its path; pflux through its finder: one file."""
    from pflux.spec import fluid as pflux_fluid

    assert pflux_fluid.JobID.parse.__func__.__globals__["_decode"] is fluid.decode  # type: ignore[attr-defined]
    assert fluid.__file__ == str(SHIM_PYTHON / "_pfluxcore" / "fluid.py")
    out = flux_output(
        """
        import flux.job.JobID, flux.job.kvslookup, flux.idset, flux.hostlist, flux.util
        import _pfluxcore
        mods = (sys.modules["flux.job.JobID"].fluid, flux.idset._ranges,
                flux.hostlist._hostlist, flux.util.duration,
                sys.modules["flux.job.kvslookup"].update)
        print(all(m.__name__.startswith("_pfluxcore.") for m in mods), _pfluxcore.__file__)
        """,
        None,
    )
    same, where = out.split()
    assert same == "True"
    assert where == str(SHIM_PYTHON / "_pfluxcore" / "__init__.py")


def test_update_sets_each_dotted_key_making_the_objects_its_path_crosses() -> None:
    jobspec: dict[str, Any] = {"attributes": {"system": {"duration": 60}, "user": 3}}
    update.apply(
        jobspec,
        {"attributes.system.duration": 120, "attributes.user.x": 1, "attributes.new.a.b": []},
    )
    assert jobspec == {
        "attributes": {
            "system": {"duration": 120},
            "user": {"x": 1},  # not an object: replaced by one
            "new": {"a": {"b": []}},
        }
    }
    r: dict[str, Any] = {"execution": {"expiration": 0.0}}
    update.set_path(r, "execution.expiration", 99.5)
    assert r == {"execution": {"expiration": 99.5}}
