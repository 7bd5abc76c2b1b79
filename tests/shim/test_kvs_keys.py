"""flux.kvs's key normalization, as flux-core's KVS reads keys, with hypothesis. The
package is loaded from its directory for this module only, and unloaded after."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support.shim import SHIM_PYTHON


@pytest.fixture(scope="module")
def kvs() -> Iterator[Any]:
    sys.path.insert(0, str(SHIM_PYTHON))
    try:
        yield importlib.import_module("flux.kvs")
    finally:
        sys.path.remove(str(SHIM_PYTHON))
        for name in [m for m in sys.modules if m == "flux" or m.startswith("flux.")]:
            del sys.modules[name]


@pytest.mark.parametrize(
    ("key", "normal"),
    [(".", "."), ("...", "."), ("", "."), ("a", "a"), (".a..b.", "a.b"), ("a.b.c", "a.b.c")],
)
def test_examples(kvs: Any, key: str, normal: str) -> None:
    assert kvs.normalize_key(key) == normal


@settings(max_examples=300)
@given(parts=st.lists(st.text(st.sampled_from("ab."), max_size=4), max_size=6))
def test_normalizing_drops_empty_components_only_and_is_idempotent(
    kvs: Any, parts: list[str]
) -> None:
    key = ".".join(parts)
    normal = kvs.normalize_key(key)
    components = [c for c in key.split(".") if c]
    assert normal == (".".join(components) or ".")
    assert kvs.normalize_key(normal) == normal
    assert normal == "." or "" not in normal.split(".")


def test_a_key_must_be_text(kvs: Any) -> None:
    with pytest.raises(TypeError, match="key must be a string, got int"):
        kvs.normalize_key(1)
