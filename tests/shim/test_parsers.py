"""The flux package's job id parser against pflux's own (``pflux.spec.fluid``), with
hypothesis (idsets and hostlists: test_hostlist_idset.py). A parser property test needs
the package in this process: it is loaded from its directory for this module only, and
unloaded after."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.errors import JobIDError
from pflux.spec.fluid import JobID as PfluxJobID
from support.shim import SHIM_PYTHON

SHARED = ("dec", "hex", "dothex", "kvs", "words", "f58plain")
ids = st.integers(0, 2**64 - 1)


@pytest.fixture(scope="module")
def shim() -> Iterator[Any]:
    sys.path.insert(0, str(SHIM_PYTHON))
    try:
        # the module (flux.job's attribute JobID is the class, as in flux-core)
        yield importlib.import_module("flux.job.JobID")
    finally:
        sys.path.remove(str(SHIM_PYTHON))
        for name in [m for m in sys.modules if m == "flux" or m.startswith("flux.")]:
            del sys.modules[name]


@settings(max_examples=300)
@given(n=ids)
def test_every_encoding_parses_back_and_matches_pflux(shim: Any, n: int) -> None:
    jobid = shim.JobID(n)
    ours = PfluxJobID(n)
    for encoding in (*SHARED, "f58", "emoji"):
        text = jobid.encode(encoding)
        assert shim.JobID(text) == n
        assert shim.JobID(f" {text}\n") == n
    for encoding in SHARED:
        assert jobid.encode(encoding) == ours.encode(encoding)
    assert jobid.f58[1:] == ours.f58[1:]


id_texts = st.one_of(
    ids.map(lambda n: PfluxJobID(n).encode("f58plain")),
    ids.map(lambda n: PfluxJobID(n).dothex),
    ids.map(lambda n: PfluxJobID(n).words.upper()),
    st.text(alphabet="0123456789abcdefxjob.-ƒ ", max_size=24),
    st.text(max_size=12),
)


@settings(max_examples=500)
@given(text=id_texts)
def test_any_text_parses_as_pflux_parses_it_or_is_refused_by_both(shim: Any, text: str) -> None:
    try:
        expected: int | None = PfluxJobID.parse(text)
    except JobIDError:
        expected = None
    refusal = ""
    try:
        got: int | None = shim.JobID(text)
    except ValueError as exc:
        refusal = str(exc)
        got = None
    if got is None:
        assert refusal == f"{text} is not a valid Flux jobid"
    if got is not None and expected is None and text.strip()[:1] >= "\U0001f000":
        return  # emoji: an encoding flux-core has and pflux's commands do not
    assert got == expected


@given(n=st.integers(min_value=2**64))
def test_an_int_past_64_bits_is_no_jobid(shim: Any, n: int) -> None:
    with pytest.raises(OverflowError, match="out of range for a Flux jobid"):
        shim.JobID(n)
