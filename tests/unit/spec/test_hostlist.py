"""Hostlists (RFC 29): expansion, flux-style compression, errors, and round trips."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.errors import HostlistError
from pflux.spec import hostlist
from pflux.spec.hostlist import MAX_HOSTS

# decoding


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        # RFC 29 test vectors
        ("", []),
        ("foox,fooy,fooz", ["foox", "fooy", "fooz"]),
        ("[1-3,5-6]", ["1", "2", "3", "5", "6"]),
        ("foo[1-5]", ["foo1", "foo2", "foo3", "foo4", "foo5"]),
        ("foo[0-4]-eth2", [f"foo{i}-eth2" for i in range(5)]),
        ("foo1,foo1,foo1", ["foo1", "foo1", "foo1"]),
        ("[00-02]", ["00", "01", "02"]),
        ("[00-2]", ["00", "01", "02"]),
        ("foo[1,1,2,1]", ["foo1", "foo1", "foo2", "foo1"]),
        # more
        ("node0", ["node0"]),
        ("node[0-3]", ["node0", "node1", "node2", "node3"]),
        ("node[01-03]", ["node01", "node02", "node03"]),
        ("node[8-10]", ["node8", "node9", "node10"]),
        ("node[08-10]", ["node08", "node09", "node10"]),
        ("node[098-100]", ["node098", "node099", "node100"]),
        ("foo[1-2],bar,baz[01-03]", ["foo1", "foo2", "bar", "baz01", "baz02", "baz03"]),
        ("foo[3,1-2]", ["foo3", "foo1", "foo2"]),
        ("foo[3-3]", ["foo3"]),
        ("f00[1-2]", ["f001", "f002"]),
        ("a[1]b", ["a1b"]),
        ("[7]", ["7"]),
        (",a,,b,", ["a", "b"]),  # empty expressions are empty lists
        ("x.y-z_w!", ["x.y-z_w!"]),
        # each element keeps the padding of its own first id, as flux-core does
        ("foo[005,4,11-13]", ["foo005", "foo4", "foo11", "foo12", "foo13"]),
    ],
)
def test_decode(text: str, hosts: list[str]) -> None:
    assert hostlist.decode(text) == hosts


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("[]", "empty brackets"),
        ("foo[]", "empty brackets"),
        ("foo[", "unbalanced brackets"),
        ("foo[1,3", "unbalanced brackets"),
        ("foo]", "unbalanced brackets"),
        ("foo[1]]", "unbalanced brackets"),
        ("foo[[1,3]", "nested brackets"),
        ("foo[1[2]]", "nested brackets"),
        ("a[1]b[2]", "more than one bracketed idlist in one expression"),
        ("foo[3-1]", 'range "3-1" descends'),
        ("foo[x-y]", 'malformed range "x-y"'),
        ("foo[0-1,2--5]", 'malformed range "2--5"'),
        ("foo[-5]", 'malformed range "-5"'),
        ("foo[5-]", 'malformed range "5-"'),
        ("foo[1,,2]", "empty element in brackets"),
        ("foo[1,]", "empty element in brackets"),
        ("foo[1-2-3]", 'malformed range "1-2-3"'),
        ("foo[" + "1" * 21 + "]", "is too long"),
        ("foo bar", "invalid character ' '"),
        ("foo\tbar", "invalid character '\\t'"),
        ("foo\u00e9", "invalid character '\u00e9'"),
        ("foo[0-1048576]", f"expands to more than {MAX_HOSTS} hosts"),
        ("a[0-600000],b[0-600000]", f"expands to more than {MAX_HOSTS} hosts"),
    ],
)
def test_decode_invalid(text: str, rule: str) -> None:
    with pytest.raises(HostlistError) as info:
        hostlist.decode(text)
    assert str(info.value).startswith("hostlist ")
    assert str(info.value).endswith(rule)


def test_decode_message_names_text() -> None:
    with pytest.raises(HostlistError, match=re.escape('hostlist "n[3-1]": range "3-1" descends')):
        hostlist.decode("n[3-1]")


def test_decode_non_string() -> None:
    with pytest.raises(HostlistError, match="must be a string"):
        hostlist.decode(["node0"])  # type: ignore[arg-type]


def test_decode_limit_is_inclusive() -> None:
    assert len(hostlist.decode(f"n[1-{MAX_HOSTS}]")) == MAX_HOSTS


# encoding


@pytest.mark.parametrize(
    ("hosts", "text"),
    [
        ([], ""),
        (["node0"], "node0"),
        (["node0", "node1", "node2", "node3"], "node[0-3]"),
        (["node1", "node2", "node3", "nodex"], "node[1-3],nodex"),
        # order is kept: a host between two runs splits them
        (["node1", "nodex", "node2", "node3"], "node1,nodex,node[2-3]"),
        (["nodex", "node1", "node2", "node5", "node7", "node8"], "nodex,node[1-2,5,7-8]"),
        (["rack-2b-7", "rack-2b-8"], "rack-2b-[7-8]"),
        (["4", "5", "6", "10"], "[4-6,10]"),
        # a number that is not trailing is not compressed
        (["n1-eth0", "n2-eth0"], "n1-eth0,n2-eth0"),
        # padding is kept, and widths that cannot share a range are split
        (["n01", "n02", "n03"], "n[01-03]"),
        (["n9", "n10", "n11"], "n[9-11]"),
        (["n09", "n10"], "n[09-10]"),
        (["n9", "n010"], "n[9,010]"),
        (["n1", "n01"], "n[1,01]"),
        (["n5", "n4", "n3"], "n[5,4,3]"),
        (["n1", "n1"], "n[1,1]"),
        (["n", "n1"], "n,n1"),
        (["a1", "b1", "a2"], "a1,b1,a2"),
        (["x" + "1" * 21, "x" + "1" * 20], "x" + "1" * 21 + ",x" + "1" * 20),
    ],
)
def test_encode(hosts: list[str], text: str) -> None:
    assert hostlist.encode(hosts) == text
    assert hostlist.decode(text) == hosts


def test_encode_accepts_any_iterable() -> None:
    assert hostlist.encode(f"n{i}" for i in range(4)) == "n[0-3]"


@pytest.mark.parametrize(
    ("hosts", "message"),
    [
        ([""], "host 0 (''): an empty string"),
        (["a", "b,c"], "host 1 ('b,c'): not a valid hostname"),
        (["a[1]"], "not a valid hostname"),
        (["a b"], "not a valid hostname"),
        ([3], "host 0 (3): not a valid hostname"),
    ],
)
def test_encode_invalid(hosts: list[object], message: str) -> None:
    with pytest.raises(HostlistError, match=re.escape(message)):
        hostlist.encode(hosts)  # type: ignore[arg-type]


# properties

_name_chars = "abcxyz-._"


@st.composite
def hostnames(draw: st.DrawFn) -> str:
    prefix = draw(st.text(alphabet=_name_chars, max_size=4))
    digits = ""
    if draw(st.booleans()) or not prefix:
        width = draw(st.integers(1, 4))
        digits = str(draw(st.integers(0, 1200))).zfill(width)
    suffix = ""
    if draw(st.integers(0, 5)) == 0:
        suffix = draw(st.text(alphabet=_name_chars, min_size=1, max_size=3))
    return prefix + digits + suffix


@st.composite
def runs(draw: st.DrawFn) -> list[str]:
    """Hosts in consecutive runs, as a cluster's nodelist would be."""
    hosts: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        prefix = draw(st.sampled_from(["node", "n", "rack1-", ""]))
        width = draw(st.integers(1, 3))
        start = draw(st.integers(0, 120))
        count = draw(st.integers(1, 30))
        hosts.extend(f"{prefix}{i:0{width}d}" for i in range(start, start + count))
    return hosts


@settings(max_examples=400)
@given(st.lists(hostnames(), max_size=30) | runs())
def test_round_trip(hosts: list[str]) -> None:
    text = hostlist.encode(hosts)
    assert hostlist.decode(text) == hosts
    assert hostlist.encode(hostlist.decode(text)) == text


@settings(max_examples=200)
@given(st.lists(st.from_regex(r"[!-+\--Z\\^-~]{1,8}", fullmatch=True), max_size=12))
def test_round_trip_any_printable_names(hosts: list[str]) -> None:
    assert hostlist.decode(hostlist.encode(hosts)) == hosts


@settings(max_examples=50)
@given(st.integers(0, 1000), st.integers(1, 500), st.sampled_from(["node", "n-"]))
def test_consecutive_hosts_compress_to_one_range(start: int, count: int, prefix: str) -> None:
    hosts = [f"{prefix}{i}" for i in range(start, start + count)]
    expected = f"{prefix}{start}" if count == 1 else f"{prefix}[{start}-{start + count - 1}]"
    assert hostlist.encode(hosts) == expected


def _outcome(text: str) -> list[str] | HostlistError:
    """What decode returns, or the HostlistError it raises; anything else escapes and fails."""
    try:
        return hostlist.decode(text)
    except HostlistError as err:
        return err


@settings(max_examples=800)
@given(st.text(alphabet="ab01-[], 9", max_size=16) | st.text(max_size=10))
def test_fuzz_decode_only_raises_hostlist_error(text: str) -> None:
    result = _outcome(text)
    if isinstance(result, HostlistError):
        assert str(result).startswith("hostlist ")
        return
    assert all(result)
    assert hostlist.decode(hostlist.encode(result)) == result


@given(hostnames() | st.from_regex(r"[!-+\--Z\\^-~]{1,8}", fullmatch=True))
def test_one_host_is_written_as_it_is(host: str) -> None:
    assert hostlist.encode([host]) == host
    assert hostlist.encode(iter([host])) == host  # not a list: the general path says the same
