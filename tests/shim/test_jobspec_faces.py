"""Both faces build one jobspec: ``pflux submit``'s options and the flux package's
``JobspecV1.from_submit`` given the same request, where flux-core's command and
its bindings agree (``-n`` always given, time limits with a unit)."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from _pfluxcore import rlimits
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pflux.cli import jobopts
from pflux.cli.options import OptionParser
from pflux.spec import builder
from support.shim import SHIM_PYTHON

ENV_RULES = ["-*", "-PATH", "PATH", "/^L/", "-/^P/", "A=1", "B=x${PATH}", "C={{tmpdir}}", "D=$$"]
RLIMIT_RULES = ["-*", "core", "nofile=100", "-nofile", "cpu=unlimited", "/^n/"]
WORDS = st.text("abcxyz", min_size=1, max_size=4)
VALUES = st.integers(0, 9) | WORDS | st.booleans()


@pytest.fixture(scope="module")
def jobspec_v1() -> Iterator[Any]:
    sys.path.insert(0, str(SHIM_PYTHON))
    try:
        yield importlib.import_module("flux.job.Jobspec").JobspecV1
    finally:
        sys.path.remove(str(SHIM_PYTHON))
        for name in [m for m in sys.modules if m == "flux" or m.startswith("flux.")]:
            del sys.modules[name]


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    """A submission as from_submit's keywords (None: not given)."""
    ntasks = draw(st.integers(1, 8))
    nodes = draw(st.none() | st.integers(1, ntasks))
    return {
        "command": draw(st.lists(WORDS, min_size=1, max_size=3)),
        "ntasks": ntasks,
        "nodes": nodes,
        "cores_per_task": draw(st.integers(1, 4)),
        "gpus_per_task": draw(st.none() | st.integers(0, 2)),
        "exclusive": nodes is not None and draw(st.booleans()),
        "name": draw(st.none() | WORDS),
        "queue": draw(st.none() | WORDS),
        "bank": draw(st.none() | WORDS),
        "cwd": draw(st.sampled_from(["/", "/tmp/x"])),
        "input": draw(st.none() | st.just("in.txt")),
        "output": draw(st.none() | st.sampled_from(["out.{{id}}", "kvs", "none"])),
        "error": draw(st.none() | st.sampled_from(["err", "kvs"])),
        "label_io": draw(st.booleans()),
        "unbuffered": draw(st.booleans()),
        "env": draw(st.lists(st.sampled_from(ENV_RULES), max_size=4)),
        "rlimit": draw(st.lists(st.sampled_from(RLIMIT_RULES), max_size=3)),
        "time_limit": draw(st.none() | st.sampled_from(["30s", "2h", "1.5m", "0s"])),
        "signal": draw(st.none() | st.sampled_from(["SIGUSR2@30s", "@2m", "10", "term"])),
        "shell_options": draw(st.dictionaries(st.sampled_from(["x", "a.b", "y"]), VALUES)),
        "attributes": draw(st.dictionaries(st.sampled_from(["user.x", "user.y.z", "k"]), VALUES)),
    }


def _keyval(key: str, value: Any) -> str:
    import json

    return f"{key}={json.dumps(value) if not isinstance(value, str) else value}"


def pflux_jobspec(req: dict[str, Any]) -> dict[str, Any]:
    """What ``pflux submit --dry-run --flags=novalidate`` prints for ``req``."""
    args = [f"-n{req['ntasks']}", f"-c{req['cores_per_task']}", f"--cwd={req['cwd']}"]
    args.append("--flags=novalidate")  # pflux's own check of shell options' values, not flux's
    args += [f"--env={rule}" for rule in req["env"]]
    args += [f"--rlimit={rule}" for rule in req["rlimit"]]
    args += [f"--setopt={_keyval(k, v)}" for k, v in req["shell_options"].items()]
    args += [f"--setattr={_keyval(k, v)}" for k, v in req["attributes"].items()]
    for option, key in [
        ("-N", "nodes"),
        ("-g", "gpus_per_task"),
        ("--job-name", "name"),
        ("--queue", "queue"),
        ("--bank", "bank"),
        ("--input", "input"),
        ("--output", "output"),
        ("--error", "error"),
        ("--time-limit", "time_limit"),
        ("--signal", "signal"),
    ]:
        if req[key] is not None:
            args += [option, str(req[key])]
    args += [
        "--" + flag.replace("_", "-")
        for flag in ("exclusive", "label_io", "unbuffered")
        if req[flag]
    ]
    parser = OptionParser("pflux submit")
    jobopts.add_options(parser)
    options = parser.parse_args([*args, "--", *req["command"]])
    request = jobopts.job_request(
        options, environ=os.environ, cwd="/", now=0.0, rlimits=rlimits.current_rlimits()
    )
    return request.jobspec


def flux_jobspec(jobspec_v1: Any, req: dict[str, Any]) -> dict[str, Any]:
    """What the flux package's ``from_submit`` builds for ``req``."""
    keywords = {key: value for key, value in req.items() if key != "command"}
    built = jobspec_v1.from_submit(req["command"], **keywords)
    return {
        "resources": built.resources,
        "tasks": built.tasks,
        "attributes": built.attributes,
        "version": built.version,
    }


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(req=requests())
def test_pflux_submit_and_from_submit_build_one_jobspec(
    jobspec_v1: Any, req: dict[str, Any]
) -> None:
    assert pflux_jobspec(req) == flux_jobspec(jobspec_v1, req)


def test_both_faces_translate_with_the_one_core(jobspec_v1: Any) -> None:
    submitopts = importlib.import_module("flux.job._submitopts")
    assert sys.modules[jobspec_v1.__module__].builder is builder.resources
    assert submitopts.envrules is jobopts.envrules
    assert submitopts.rlimits is jobopts.rlimit_rules
    assert submitopts.submitopts is jobopts.submitopts is builder.submitopts
