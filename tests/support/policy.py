"""The scheduling policy the tests run under: shells give way (SCHED_BATCH) only from
SCHED_OTHER, so the tests of it skip under any other."""

from __future__ import annotations

import os

import pytest

UNDER_OTHER = pytest.mark.skipif(
    os.sched_getscheduler(0) != os.SCHED_OTHER, reason="the tests run under another policy"
)
