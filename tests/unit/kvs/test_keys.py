"""KVS keys: validation, namespace mapping, and where a job's keys live."""

from __future__ import annotations

import errno
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.kvs.keys import (
    ROOT,
    KVSError,
    check_component,
    check_key,
    check_name,
    default_prefix,
    from_primary,
    to_primary,
)
from pflux.spec.kvs_keys import job_id_from_key, job_key


@pytest.mark.parametrize(
    "key", ["a", "a.b", "job.0000.0004.b200.0000.eventlog", "ƒ.ü-x_1", "a-.b", "x" * 300]
)
def test_valid_keys(key: str) -> None:
    assert check_key(key) == key


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("", 'key "": empty'),
        ("a..b", 'key "a..b": empty path component'),
        (".a", 'key ".a": empty path component'),
        ("a.", 'key "a.": empty path component'),
        ("a.b c", 'key "a.b c": path component "b c" contains whitespace or a control character'),
        ("a\x00", 'key "a\\u0000": path component "a\\u0000" contains whitespace'),
        ("a.\tb", 'key "a.\\tb": path component "\\tb" contains whitespace'),
        (".", 'key ".": the root directory is not allowed here'),
    ],
)
def test_invalid_keys_say_which_rule(key: str, message: str) -> None:
    with pytest.raises(KVSError) as info:
        check_key(key)
    assert info.value.errnum == errno.EINVAL
    assert info.value.errstr.startswith(message)


def test_root_only_where_allowed() -> None:
    assert check_key(".", root=True) == "."


@pytest.mark.parametrize("key", [None, 5, ["a"], b"a"])
def test_a_key_must_be_a_string(key: object) -> None:
    with pytest.raises(KVSError, match="key must be a string"):
        check_key(key)


@given(st.text(max_size=20))
@settings(max_examples=300)
def test_check_key_raises_only_kvs_errors(text: str) -> None:
    try:
        checked: str | int = check_key(text)
    except KVSError as exc:
        checked = exc.errnum
    bad = {chr(c) for c in range(32)} | {"\x7f"}
    valid = all(part and not any(c.isspace() or c in bad for c in part) for part in text.split("."))
    assert checked == (text if valid else errno.EINVAL)


def test_component_and_name_rules() -> None:
    assert check_component("eventlog", "suffix") == "eventlog"
    with pytest.raises(KVSError, match=re.escape('suffix "a.b": must be one path component')):
        check_component("a.b", "suffix")
    assert check_name("job-1234") == "job-1234"
    for bad in ("", "a b", 7):
        with pytest.raises(KVSError, match=r"namespace .*: a name must be non-empty"):
            check_name(bad)


def test_namespace_mapping() -> None:
    assert to_primary(ROOT, "a.b") == "a.b"
    assert to_primary("job.x.guest", "output") == "job.x.guest.output"
    assert to_primary("job.x.guest", ROOT) == "job.x.guest"
    assert from_primary("job.x.guest", "job.x.guest.output") == "output"
    assert from_primary("job.x.guest", "job.x.guest") == ROOT
    assert from_primary(ROOT, "a.b") == "a.b"


def test_job_key_uses_the_kvs_encoding() -> None:
    assert job_key(6787342413402046) == "job.0018.1d0d.4d85.0fbe"
    assert job_key(6787342413402046, "eventlog") == "job.0018.1d0d.4d85.0fbe.eventlog"
    assert job_key(1, "guest", "output") == "job.0000.0000.0000.0001.guest.output"


@given(st.integers(0, 2**64 - 1), st.sampled_from([(), ("eventlog",), ("guest", "output")]))
@settings(max_examples=200)
def test_job_id_from_key_inverts_job_key(jobid: int, path: tuple[str, ...]) -> None:
    assert job_id_from_key(job_key(jobid, *path), *path) == jobid


@pytest.mark.parametrize(
    ("key", "path"),
    [
        ("job.0000.0000.0000.0001.R", ("eventlog",)),
        ("job.0000.0000.0000.0001.guest.eventlog", ("eventlog",)),
        ("job.0000.0000.0001.eventlog", ("eventlog",)),
        ("job.0000.0000.0000.000G.eventlog", ("eventlog",)),
        ("jobs.0000.0000.0000.0001.eventlog", ("eventlog",)),
        ("job.0000.0000.0000.0001", ("eventlog",)),
    ],
)
def test_job_id_from_key_rejects_other_keys(key: str, path: tuple[str, ...]) -> None:
    assert job_id_from_key(key, *path) is None


names = st.text(st.characters(blacklist_categories=("Cc", "Zs", "Zl", "Zp")), min_size=1)


@settings(max_examples=300)
@given(a=names, b=names)
def test_a_default_prefix_is_one_valid_component_below_ns_and_two_names_never_share_one(
    a: str, b: str
) -> None:
    check_name(a)
    prefix = default_prefix(a)
    assert check_key(prefix) == prefix
    assert prefix.split(".")[0] == "ns"
    assert len(prefix.split(".")) == 2
    assert (default_prefix(b) == prefix) == (a == b)
