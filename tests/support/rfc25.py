"""RFC 25's example jobspecs, read from their one copy in ``tests/data/rfc25``.

The tests and the benchmarks (``bench/``) share them. Importing this is cheap:
YAML is parsed when ``example()`` first asks for a case, so a benchmark that
times its own imports does not pay for PyYAML here.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

FOLDER = Path(__file__).resolve().parents[1] / "data" / "rfc25"
# the main example, then RFC 25's use cases in the order the RFC gives them
CASES = ("example", "1.1", "2.1", "2.2", "2.3", "2.4")


def text(case: str = "example") -> str:
    """The YAML of the main example or of use case ``case`` (``"1.1"`` ... ``"2.4"``), verbatim."""
    name = case if case == "example" else f"use_case_{case}"
    return (FOLDER / f"{name}.yaml").read_text()


@functools.cache
def _decoded(case: str) -> dict[str, Any]:
    import yaml

    doc: dict[str, Any] = yaml.safe_load(text(case))
    return doc


def example(case: str = "example") -> dict[str, Any]:
    """``text(case)`` decoded: a fresh copy on every call, for callers that edit it."""
    return copy.deepcopy(_decoded(case))


def broken() -> dict[str, Any]:
    """The main example with five problems that RFC 25's schema itself catches."""
    doc = example()
    doc["resources"][0]["count"] = 0
    doc["resources"][0]["with"][0]["with"][0]["count"] = 0
    doc["tasks"][0]["count"]["per_slot"] = 0
    doc["tasks"][0]["color"] = "red"
    doc["attributes"]["system"]["duration"] = "1h"
    return doc
