"""``--env`` and ``--rlimit`` name patterns: a glob of literal text and ``*`` is matched
without fnmatch (and its re), as fnmatch matches it."""

from __future__ import annotations

from fnmatch import fnmatchcase

from _pfluxcore.namepattern import matcher
from hypothesis import given, settings
from hypothesis import strategies as st

names = st.text(alphabet="ab*?[]/_", max_size=8)


@settings(max_examples=1500, deadline=None)
@given(st.text(alphabet="ab*?[]!/", max_size=6), names)
def test_a_glob_matches_as_fnmatchcase(pattern: str, name: str) -> None:
    if pattern.startswith("/"):
        return  # a /regex/
    assert matcher("--env", pattern, pattern)(name) == fnmatchcase(name, pattern)


@settings(max_examples=1500, deadline=None)
@given(st.text(alphabet="ab*", max_size=7), st.text(alphabet="ab", max_size=7))
def test_a_glob_of_text_and_stars_matches_as_fnmatchcase(pattern: str, name: str) -> None:
    assert matcher("--env", pattern, pattern)(name) == fnmatchcase(name, pattern)


def test_examples() -> None:
    assert matcher("--env", "-*", "*")("PATH")
    assert matcher("--env", "-FLUX_*", "FLUX_*")("FLUX_URI")
    assert not matcher("--env", "-FLUX_*", "FLUX_*")("PFLUX_URI")
    assert matcher("--env", "a*b*a", "a*b*a")("aba")
    assert not matcher("--env", "a*a", "a*a")("a")
    assert not matcher("--env", "a*b*b", "a*b*b")("ab")
    assert matcher("--rlimit", "-nofile", "nofile")("nofile")
    assert not matcher("--rlimit", "-nofile", "nofile")("nofiles")
