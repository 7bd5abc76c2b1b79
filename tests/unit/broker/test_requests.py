"""The one request check shared by job-ingest and the job manager that no type states."""

from __future__ import annotations

import errno

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.broker.requests import check_urgency
from pflux.errors import RPCError


@given(st.integers(min_value=0, max_value=31))
def test_the_owner_sets_any_urgency_a_guest_up_to_the_default(urgency: int) -> None:
    assert check_urgency(urgency, owner=True) == urgency
    if urgency <= 16:
        assert check_urgency(urgency, owner=False) == urgency
    else:
        with pytest.raises(RPCError) as info:
            check_urgency(urgency, owner=False)
        assert (info.value.errnum, info.value.errstr) == (
            errno.EPERM,
            "urgency: only the instance owner may set more than 16",
        )
