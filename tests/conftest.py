"""Fixtures shared by the whole suite."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from pflux.api import Client
from pflux.spec import jsontext
from support.instance import LiveInstance

# Two pytest workers and the instances their tests start load the machine: making an
# example may then take longer than hypothesis's health check allows, and running one
# longer than its deadline. Neither is what a test asserts (none is timed), so neither
# fails one here.
settings.register_profile("suite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")

# pytest-xdist's workers export LINES=24 and COLUMNS=80, which would override the size of
# every terminal a test gives a command (and the width of what it prints elsewhere)
for _name in ("LINES", "COLUMNS"):
    os.environ.pop(_name, None)

# a command given no instance finds none, whatever system instance this machine runs
# (/dev/null is no directory: nothing can be there)
os.environ["PFLUX_SYSTEM_URI"] = "local:///dev/null/pflux-system"


@pytest.fixture(autouse=True)
def _json_as_it_was() -> Iterator[None]:
    """A command run in this process (``pflux.cli.main``) sets the standard library's JSON
    for the rest of its process, as a command's own process wants; the next test gets
    what the process had before, whichever test ran before it on this worker."""
    chosen = jsontext.dumps, jsontext.loads
    yield
    jsontext.dumps, jsontext.loads = chosen


@pytest.fixture(scope="module")
def instance(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveInstance]:
    """A live instance shared by one test module."""
    with LiveInstance(tmp_path_factory.mktemp("instance") / "state") as live:
        yield live


@pytest.fixture(scope="module")
def uri(instance: LiveInstance) -> str:
    return instance.uri


@pytest.fixture
def client(uri: str) -> Iterator[Client]:
    with Client(uri) as c:
        yield c
