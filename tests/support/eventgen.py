"""Hypothesis strategies for RFC 18 events: any JSON context, any name without a newline."""

from __future__ import annotations

from hypothesis import strategies as st

from pflux.spec.eventlog import Event

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
events = st.builds(
    Event,
    timestamp=st.floats(min_value=1e-300, max_value=1e300, allow_nan=False, allow_infinity=False),
    name=st.text(min_size=1).filter(lambda s: "\n" not in s),
    context=st.none() | st.dictionaries(st.text(), json_values, max_size=5),
)
