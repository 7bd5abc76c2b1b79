"""``flux.job.Jobspec`` of the shim: flux-core's builders, checks and messages, accepted by pflux.

The expected jobspecs are what flux-core's ``JobspecV1`` builds for the same
call (its ``src/bindings/python/flux/job/Jobspec.py``, and the cases of its
``t/python/t0010-job.py`` and ``t0018-jobspec.py``), compared as JSON text so
that key order counts too. The module is imported here from the shim's
directory (it is pure), and once in a clean interpreter (``-I -S``: no
site-packages) to prove it needs the standard library alone.
"""

from __future__ import annotations

import datetime
import importlib
import json
import os
import pathlib
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pflux
from pflux.api import Client
from pflux.errors import JobspecError
from pflux.spec.fluid import JobID
from pflux.spec.jobspec import validate
from support.instance import pflux as run_pflux

SHIM = Path(pflux.__file__).resolve().parent / "fluxshim" / "python"
if str(SHIM) not in sys.path:
    sys.path.insert(0, str(SHIM))
module = importlib.import_module("flux.job.Jobspec")
Jobspec, JobspecV1 = module.Jobspec, module.JobspecV1

NO_ENV: dict[str, str] = {}


def exactly(message: str) -> str:
    """A pattern matching ``message`` whole."""
    return f"^{re.escape(message)}$"


def slot(count: int, children: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "slot", "count": count, "with": children, "label": "task"}


def core(count: int = 1) -> dict[str, Any]:
    return {"type": "core", "count": count}


def spec(resources: list[Any], command: list[str], count: dict[str, int], system: Any) -> str:
    """The JSON flux-core's dumps() gives: its keys in its order."""
    task = {"command": command, "slot": "task", "count": count}
    document = {"resources": resources, "tasks": [task], "attributes": {"system": system}}
    return json.dumps({**document, "version": 1}, ensure_ascii=False)


# ----------------------------------------------------- what flux-core builds


BUILT = [
    pytest.param(
        lambda: JobspecV1.from_command(["hostname"], environment=NO_ENV),
        spec(
            [slot(1, [core()])], ["hostname"], {"per_slot": 1}, {"duration": 0, "environment": {}}
        ),
        id="one-task",
    ),
    pytest.param(
        lambda: JobspecV1.from_command(
            ["app"],
            num_tasks=4,
            cores_per_task=2,
            gpus_per_task=1,
            num_nodes=2,
            exclusive=True,
            environment=NO_ENV,
        ),
        spec(
            [
                {
                    "type": "node",
                    "count": 2,
                    "exclusive": True,
                    "with": [slot(2, [core(2), {"type": "gpu", "count": 1}])],
                }
            ],
            ["app"],
            {"per_slot": 1},
            {"duration": 0, "environment": {}},
        ),
        id="nodes-gpus-exclusive",
    ),
    pytest.param(
        lambda: JobspecV1.from_command(
            ["app"], num_tasks=3, num_nodes=2, gpus_per_task=0, environment=NO_ENV
        ),
        spec(
            [{"type": "node", "count": 2, "with": [slot(2, [core()])]}],
            ["app"],
            {"total": 3},
            {"duration": 0, "environment": {}},
        ),
        id="uneven-spread-total",
    ),
    pytest.param(
        lambda: JobspecV1.from_command(
            ["app"],
            duration="1.5h",
            environment={"A": "1"},
            env_expand={"D": "{{tmpdir}}"},
            cwd=pathlib.Path("/w"),
            rlimits={"nofile": 100},
            name="n",
            input="in",
            output="out.{{id}}",
            error="err",
            label_io=True,
            unbuffered=True,
            queue="q",
            bank="b",
        ),
        spec(
            [slot(1, [core()])],
            ["app"],
            {"per_slot": 1},
            {
                "duration": 5400.0,
                "environment": {"A": "1"},
                "shell": {
                    "options": {
                        "env-expand": {"D": "{{tmpdir}}"},
                        "rlimit": {"nofile": 100},
                        "input": {"stdin": {"type": "file", "path": "in"}, "batch-timeout": 0.0},
                        "output": {
                            "stdout": {
                                "type": "file",
                                "path": "out.{{id}}",
                                "label": True,
                                "buffer": {"type": "none"},
                            },
                            "stderr": {
                                "type": "file",
                                "path": "err",
                                "label": True,
                                "buffer": {"type": "none"},
                            },
                            "batch-timeout": 0.05,
                        },
                    }
                },
                "cwd": "/w",
                "job": {"name": "n"},
                "queue": "q",
                "bank": "b",
            },
        ),
        id="every-keyword",
    ),
    pytest.param(
        lambda: JobspecV1.from_command(
            ["a"], output="kvs", error="none", label_io=True, environment=NO_ENV
        ),
        spec([slot(1, [core()])], ["a"], {"per_slot": 1}, {"duration": 0, "environment": {}}),
        id="kvs-and-none-output-leave-the-default",
    ),
    pytest.param(
        lambda: JobspecV1.from_nest_command(
            ["sleep", "0"],
            num_slots=2,
            cores_per_slot=2,
            num_nodes=2,
            broker_opts=["-v"],
            conf={"a": 1},
            environment=NO_ENV,
        ),
        spec(
            [{"type": "node", "count": 2, "with": [slot(1, [core(2)])]}],
            ["flux", "broker", "-v", "-c{{tmpdir}}/conf.json", "sleep", "0"],
            {"per_slot": 1},
            {
                "duration": 0,
                "environment": {},
                "shell": {
                    "options": {
                        "per-resource": {"type": "node"},
                        "mpi": "none",
                        "exit-timeout": "none",
                    }
                },
                "files": {"conf.json": {"mode": 0o100600, "data": {"a": 1}}},
            },
        ),
        id="nest",
    ),
    pytest.param(
        lambda: JobspecV1.from_batch_command(
            "#!/bin/sh\nflux run hostname\n",
            "batch",
            args=["x"],
            duration=60,
            environment=NO_ENV,
        ),
        spec(
            [slot(1, [core()])],
            ["flux", "broker", "{{tmpdir}}/script", "x"],
            {"per_slot": 1},
            {
                "duration": 60.0,
                "environment": {},
                "job": {"name": "batch"},
                "shell": {
                    "options": {
                        "per-resource": {"type": "node"},
                        "mpi": "none",
                        "exit-timeout": "none",
                    }
                },
                "files": {
                    "script": {
                        "mode": 0o100700,
                        "data": "#!/bin/sh\nflux run hostname\n",
                        "encoding": "utf-8",
                    }
                },
            },
        ),
        id="batch",
    ),
    pytest.param(
        lambda: JobspecV1.per_resource(
            ["app"],
            ncores=4,
            nnodes=2,
            per_resource_type="node",
            per_resource_count=3,
            gpus_per_node=1,
            environment=NO_ENV,
        ),
        spec(
            [
                {
                    "type": "node",
                    "count": 2,
                    "with": [slot(1, [core(2), {"type": "gpu", "count": 1}])],
                }
            ],
            ["app"],
            {"per_slot": 1},
            {
                "duration": 0,
                "shell": {"options": {"per-resource": {"type": "node", "count": 3}}},
                "environment": {},
            },
        ),
        id="per-resource",
    ),
]


@pytest.mark.parametrize(("build", "expected"), BUILT)
def test_the_builders_make_what_flux_core_makes(build: Callable[[], Any], expected: str) -> None:
    jobspec = build()
    assert jobspec.dumps() == expected
    validate(json.loads(jobspec.dumps()))  # and pflux's own validator accepts it


def test_nest_and_batch_jobspecs_are_accepted_by_a_live_instance(client: Client) -> None:
    # job-ingest checks shell options too: mpi=none and exit-timeout=none pass
    nest = JobspecV1.from_nest_command(["sleep", "0"], num_slots=2)
    batch = JobspecV1.from_batch_command("#!/bin/sh\ntrue\n", "b", duration="1m")
    ids = [client.submit(json.loads(js.dumps()), urgency="hold") for js in (nest, batch)]
    assert [client.job_info(jobid, ["name"]).name for jobid in ids] == ["flux", "b"]
    for jobid in ids:
        client.cancel(jobid)


def test_a_command_jobspec_runs_on_a_live_instance(uri: str, client: Client) -> None:
    jobspec = JobspecV1.from_command(["true"], num_tasks=2, duration="1m")
    submitted = run_pflux(uri, "job", "submit", stdin=jobspec.dumps())
    assert submitted.returncode == 0, submitted.stderr
    assert client.wait(JobID.parse(submitted.stdout.strip()), timeout=60).success


# --------------------------------------------------- a clean interpreter


CLEAN = """
import sys
sys.path.insert(0, sys.argv[1])
import flux.job.Jobspec
module = sys.modules["flux.job.Jobspec"]  # flux.job.Jobspec is the class, as flux-core's
heavy = ("json", "datetime", "collections", "typing", "re", "yaml", "pflux")
loaded = [name for name in heavy if name in sys.modules]
import json
js = module.JobspecV1.from_command(["true"], num_tasks=2, environment={})
js.duration = "2m"
again = module.JobspecV1.from_yaml_stream(js.dumps())
try:
    module.Jobspec.from_yaml_stream("version: 1\\n")
    why = None
except ImportError as exc:
    why = str(exc)
try:
    module.Jobspec.from_yaml_stream(b'{"version": 1,')
    bad = None
except ValueError as exc:
    bad = type(exc).__name__
print(json.dumps([loaded, again.jobspec == js.jobspec, again.duration, why, bad]))
"""


def test_it_imports_lightly_with_the_standard_library_alone() -> None:
    # -I -S: no site-packages (so no PyYAML) and no environment; the module loads
    # nothing costly until used, and reads JSON jobspecs without PyYAML
    result = subprocess.run(
        [sys.executable, "-I", "-S", "-c", CLEAN, str(SHIM)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [
        [],
        True,
        120.0,
        "reading a YAML jobspec needs PyYAML, which is not installed"
        " (a JSON jobspec is read without it)",
        "JSONDecodeError",
    ]


# --------------------------------------------------------- the properties


BASIC = json.dumps(
    {
        "version": 1,
        "resources": [slot(1, [core()])],
        "tasks": [{"command": ["app"], "slot": "foo", "count": {"per_slot": 1}}],
        "attributes": {"system": {"duration": 0}},
    }
)


def basic() -> Any:
    return Jobspec.from_yaml_stream(BASIC)


@pytest.mark.parametrize("seconds", [100, 100.5])
def test_duration_takes_seconds_a_string_or_a_timedelta(seconds: float) -> None:
    jobspec = basic()
    for value in (seconds, datetime.timedelta(seconds=seconds), f"{seconds}s"):
        jobspec.duration = value
        assert jobspec.duration == float(seconds)
        assert type(jobspec.duration) is float


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (-100, ValueError, "duration must not be negative"),
        (-100.5, ValueError, "duration must not be negative"),
        (datetime.timedelta(seconds=-5), ValueError, "duration must not be negative"),
        ("10h5m", ValueError, "invalid Flux standard duration"),
        ("-5s", ValueError, "invalid Flux standard duration"),
        ("inf", ValueError, "duration must be a normal, finite value"),
        (float("nan"), ValueError, "duration must be a normal, finite value"),
        ([], TypeError, "duration must be an int, float, string, or timedelta"),
        ({}, TypeError, "duration must be an int, float, string, or timedelta"),
    ],
)
def test_a_bad_duration_is_refused(value: Any, error: type[Exception], message: str) -> None:
    jobspec = basic()
    with pytest.raises(error, match=exactly(message)):
        jobspec.duration = value


def flux_parse_fsd(text: str) -> float:
    """flux.util.parse_fsd's rule, restated: a regular expression and timedelta."""
    if text in ("inf", "infinity", "INF", "INFINITY"):
        return float("inf")
    match = re.match(r"(.*?)(s|m|h|d|ms)$", text)
    try:
        value = float(match.group(1) if match else text)
    except ValueError:
        raise ValueError("invalid Flux standard duration") from None
    unit = match.group(2) if match else "s"
    names = {"m": "minutes", "h": "hours", "d": "days", "ms": "milliseconds"}
    seconds = value if unit == "s" else datetime.timedelta(**{names[unit]: value}).total_seconds()
    if not 0 <= seconds < float("inf"):
        raise ValueError("invalid Flux standard duration")
    return seconds


def outcome(parse: Callable[[str], float], text: str) -> tuple[str, Any]:
    try:
        return "ok", parse(text)
    except (ValueError, OverflowError) as exc:
        return type(exc).__name__, str(exc)


NUMBER = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-(10**12), 10**12).map(str),
    st.from_regex(r"\A[-+ ]?[0-9_]{0,6}(\.[0-9]{0,4})?(e[-+]?[0-9]{1,3})?\s?\Z"),
)
FSD = st.one_of(
    st.tuples(NUMBER, st.sampled_from(["", "s", "m", "h", "d", "ms", "ms\n", "x", "\n"])).map(
        "".join
    ),
    st.text(max_size=8),
)


@given(FSD)
def test_durations_parse_as_flux_parses_them(text: str) -> None:
    expected = outcome(flux_parse_fsd, text)
    assert outcome(module.parse_fsd, text) == expected
    assert outcome(importlib.import_module("flux.util").parse_fsd, text) == expected


def test_cwd_environment_and_queue() -> None:
    jobspec = basic()
    jobspec.cwd = pathlib.PosixPath("/tmp")
    assert jobspec.cwd == "/tmp"
    env = {"HOME": "foo", "foo": "bar"}
    jobspec.environment = env
    assert jobspec.environment is env  # kept, not copied, as flux's
    jobspec.queue = "default"
    assert jobspec.queue == "default"
    with pytest.raises(TypeError, match=exactly("queue must be a string")):
        jobspec.queue = 12
    with pytest.raises(ValueError, match=exactly("cwd must be a string")):
        jobspec.cwd = 1
    with pytest.raises(ValueError, match=exactly("environment must be a mapping")):
        jobspec.environment = [("A", "1")]


TEXT = st.text(st.characters(blacklist_categories=("Cs",)))  # JSON text: no lone surrogates


@given(st.dictionaries(TEXT.filter(bool), TEXT))
def test_an_environment_travels_whole(env: dict[str, str]) -> None:
    jobspec = JobspecV1.from_command(["true"], environment=env)
    assert json.loads(jobspec.dumps())["attributes"]["system"]["environment"] == env
    validate(json.loads(jobspec.dumps()))


@pytest.mark.parametrize(
    ("name", "alias"), [("error", "stderr"), ("output", "stdout"), ("input", "stdin")]
)
def test_stdio_paths_and_their_aliases(name: str, alias: str) -> None:
    jobspec = basic()
    assert getattr(jobspec, name) is None
    for path in ("foo.txt", pathlib.Path("bar.md")):
        setattr(jobspec, name, path)
        assert getattr(jobspec, name) == getattr(jobspec, alias) == str(path)
    with pytest.raises(
        TypeError, match=exactly("The path must be a string or pathlib object, got NoneType")
    ):
        setattr(jobspec, alias, None)


def test_unbuffered_sets_and_clears_what_it_set() -> None:
    jobspec = basic()
    with pytest.raises(TypeError, match=exactly("unbuffered must be True or False")):
        jobspec.unbuffered = 1
    jobspec.unbuffered = True
    assert jobspec.unbuffered
    assert jobspec.getattr("shell.options.output.stderr.buffer.type") == "none"
    assert jobspec.getattr("shell.options.output.batch-timeout") == 0.05
    jobspec.unbuffered = False
    assert not jobspec.unbuffered
    assert "shell" not in jobspec.attributes["system"]
    jobspec.unbuffered = True
    jobspec.setattr_shell_option("output.batch-timeout", 1.0)
    jobspec.unbuffered = False  # a batch timeout set since is kept
    assert jobspec.getattr("shell.options.output.batch-timeout") == 1.0


def test_setattr_puts_bare_keys_under_system() -> None:
    jobspec = basic()
    for key, value in (
        ("cow", 1),
        ("system.cat", 2),
        ("user.dog", 3),
        ("attributes.system.chicken", 4),
        ("attributes.user.duck", 5),
        ("attributes.goat", 6),
    ):
        jobspec.setattr(key, value)
    assert jobspec.getattr("cow") == jobspec.getattr("attributes.system.cow") == 1
    assert jobspec.getattr("cat") == jobspec.getattr("system.cat") == 2
    assert jobspec.getattr("user.dog") == jobspec.getattr("attributes.user.dog") == 3
    assert jobspec.getattr("chicken") == 4
    assert jobspec.getattr("attributes.user.duck") == 5
    assert jobspec.getattr("attributes.goat") == 6
    with pytest.raises(KeyError):
        jobspec.getattr("user.horse")
    with pytest.raises(
        TypeError,
        match=exactly(
            "failed to set attributes.system.cow.x to 1:"
            " 'int' object does not support item assignment"
        ),
    ):
        jobspec.setattr("cow.x", 1)
    assert str(jobspec) == (
        "{'resources': [{'type': 'slot', 'count': 1, 'with': [{'type': 'core', 'count': 1}],"
        " 'label': 'task'}], 'tasks': [{'command': ['app'], 'slot': 'foo', 'count':"
        " {'per_slot': 1}}], 'attributes': {'system': {'duration': 0, 'cow': 1, 'cat': 2,"
        " 'chicken': 4}, 'user': {'dog': 3, 'duck': 5}, 'goat': 6}, 'version': 1}"
    )


def test_repr_rebuilds_the_jobspec() -> None:
    jobspec = basic()
    jobspec.cwd = "/foo/bar"
    jobspec.stdout = "/bar/baz"
    jobspec.duration = 1000.3133
    rebuilt = eval(repr(jobspec), {"Jobspec": Jobspec})
    assert rebuilt.jobspec == jobspec.jobspec
    assert repr(jobspec).startswith("Jobspec([{'type': 'slot'")


# ------------------------------------------------------------- the factories


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"duration": "1f"}, "invalid Flux standard duration"),
        ({"environment": "foo"}, "environment must be a mapping"),
        ({"env_expand": 1}, "env_expand must be a mapping"),
        ({"rlimits": True}, "rlimits must be a mapping"),
        ({"num_tasks": 0}, "task count must be a integer >= 1"),
        ({"cores_per_task": 1.5}, "cores per task must be an integer >= 1"),
        ({"gpus_per_task": -1}, "gpus per task must be an integer >= 0"),
        ({"num_nodes": 0}, "node count must be an integer >= 1 (if set)"),
        ({"num_nodes": 2}, "node count must not be greater than task count"),
        ({"exclusive": True}, "exclusive can only be set with a node count"),
    ],
)
def test_from_command_refuses_bad_keywords(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=exactly(message)):
        JobspecV1.from_command(["sleep", "0"], **kwargs)


def test_the_environment_defaults_to_this_processs() -> None:
    assert JobspecV1.from_command(["sleep", "0"]).environment == dict(os.environ)
    assert JobspecV1.from_command(["sleep", "0"], environment={}).environment == {}


def test_batch_command_takes_from_commands_keywords() -> None:
    with pytest.raises(
        ValueError, match=exactly("nested sleep does not appear to start with '#!'")
    ):
        JobspecV1.from_batch_command("sleep 0", "nested sleep")
    environment = {"TEST": "1", "FOO": "BAR"}
    jobspec = JobspecV1.from_batch_command(
        "#!/bin/sh\0sleep0",
        "testjob",
        environment=environment,
        env_expand={"EXPAND": "{{tmpdir}}"},
        rlimits={"nofile": 12000},
        duration=60.0,
        cwd="/my/cwd",
        output="output-file",
        error="error-file",
        label_io=True,
        unbuffered=True,
        queue="testq",
        bank="testbank",
    )
    assert jobspec.environment == environment
    assert jobspec.getattr("system.shell.options.env-expand") == {"EXPAND": "{{tmpdir}}"}
    assert jobspec.getattr("system.shell.options.rlimit") == {"nofile": 12000}
    assert (jobspec.duration, jobspec.cwd) == (60, "/my/cwd")
    assert (jobspec.output, jobspec.error) == ("output-file", "error-file")
    assert jobspec.getattr("system.shell.options.output.stdout.label") is True
    assert jobspec.getattr("system.shell.options.output.stderr.label") is True
    assert jobspec.getattr("system.shell.options.output.stdout.buffer.type") == "none"
    assert (jobspec.getattr("system.queue"), jobspec.getattr("system.bank")) == (
        "testq",
        "testbank",
    )
    assert jobspec.getattr("system.job.name") == "testjob"


def test_nest_command_takes_from_commands_keywords() -> None:
    jobspec = JobspecV1.from_nest_command(
        ["sleep", "0"], name="test", duration="10m", cwd="/my/cwd", queue="testq"
    )
    assert (jobspec.duration, jobspec.cwd, jobspec.queue) == (600, "/my/cwd", "testq")
    assert jobspec.getattr("attributes.system.job.name") == "test"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"ncores": 2, "per_resource_type": "node"},
            "must specify a per_resource_count with per_resource_type",
        ),
        (
            {"ncores": 2, "per_resource_count": 1},
            "must specify a per_resource_type with per_resource_count",
        ),
        (
            {"ncores": 2, "per_resource_type": "socket", "per_resource_count": 1},
            "Invalid per_resource_type='socket' specified",
        ),
        ({"ncores": 3, "nnodes": 2}, "number of cores must be evenly divisible by node count"),
        ({"ncores": 1, "nnodes": 2}, "number of cores cannot be less than nnodes"),
        ({"nnodes": 2}, "Specifying nnodes also requires ncores or exclusive"),
        ({"ncores": 2, "gpus_per_node": 1}, "gpus_per_node must be specified with nnodes"),
        ({}, "must specify node or core count with per_resource"),
    ],
)
def test_per_resource_refuses_what_flux_refuses(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=exactly(message)):
        JobspecV1.per_resource(["app"], **kwargs)


def test_add_file_reads_a_local_file_keeping_its_mode(tmp_path: Path) -> None:
    text, blob = tmp_path / "a.txt", tmp_path / "b.bin"
    text.write_text("héllo")
    blob.write_bytes(b"\xff\x00")
    blob.chmod(0o640)
    jobspec = JobspecV1.from_command(["true"], environment={})
    jobspec.add_file("a", str(text))
    jobspec.add_file("b", str(blob))
    jobspec.add_file("c", "two\nlines\n", perms=0o755)
    files = jobspec.getattr("files")
    assert files["a"] == {
        "mode": text.stat().st_mode,
        "size": 6,
        "data": "héllo",
        "encoding": "utf-8",
    }
    assert files["b"] == {"mode": 0o100640, "size": 2, "data": "/wA=", "encoding": "base64"}
    assert files["c"] == {"mode": 0o100755, "data": "two\nlines\n", "encoding": "utf-8"}
    with pytest.raises(TypeError, match=exactly("data must be a Mapping or string")):
        jobspec.add_file("d", 1)
    with pytest.raises(ValueError, match=exactly("invalid encoding: hex")):
        jobspec.add_file("d", "00", encoding="hex")


# ------------------------------------------------------ reading and checking


SHAPED = {
    "version": 1,
    "resources": [
        {
            "type": "node",
            "count": 1,
            "with": [
                {
                    "type": "slot",
                    "count": 10,
                    "label": "small",
                    "with": [core(), {"type": "memory", "count": 4, "unit": "GB"}],
                },
                {
                    "type": "slot",
                    "count": 1,
                    "label": "big",
                    "with": [core(6), {"type": "memory", "count": 24, "unit": "GB"}],
                },
            ],
        }
    ],
    "tasks": [
        {"command": ["small"], "slot": "small", "count": {"per_slot": 1}},
        {"command": ["big"], "slot": "big", "count": {"per_slot": 1}},
    ],
    "attributes": {"system": {"duration": 3600}},
}


def test_iteration_and_counts_walk_the_resource_tree() -> None:
    jobspec = Jobspec.from_yaml_stream(json.dumps(SHAPED))
    assert [resource["type"] for resource in jobspec] == [
        "node",
        "slot",
        "core",
        "memory",
        "slot",
        "core",
        "memory",
    ]
    assert dict(jobspec.resource_counts()) == {"node": 1, "slot": 11, "core": 16, "memory": 64}
    assert jobspec.resource_counts()["gpu"] == 0
    walked = [
        (parent and parent["type"], res["type"], n) for parent, res, n in jobspec.resource_walk()
    ]
    assert walked[:3] == [(None, "node", 1), ("node", "slot", 10), ("slot", "core", 10)]


def test_yaml_files_and_streams(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(
        "version: 1\nresources:\n  - type: slot\n    count: 1\n    label: task\n"
        "    with:\n      - type: core\n        count: 1\n"
        "tasks:\n  - command: [hostname]\n    slot: task\n    count: {per_slot: 1}\n"
        "attributes:\n  system:\n    duration: 0\n"
    )
    jobspec = JobspecV1.from_yaml_file(path)
    assert type(jobspec) is JobspecV1
    assert jobspec.tasks[0]["command"] == ["hostname"]
    with path.open() as stream:
        assert Jobspec.from_yaml_stream(stream).jobspec == jobspec.jobspec
    assert module.validate_jobspec(jobspec)[1].jobspec == jobspec.jobspec
    ok, checked = module.validate_jobspec(json.dumps(SHAPED).encode())
    assert ok is True
    assert type(checked) is JobspecV1


def change(path: str, value: Any) -> dict[str, Any]:
    """SHAPED with the value at dotted ``path`` replaced (``...`` removes it)."""
    document = json.loads(json.dumps(SHAPED))
    *parents, last = [int(part) if part.isdigit() else part for part in path.split(".")]
    target = document
    for part in parents:
        target = target[part]
    if value is ...:
        del target[last]
    else:
        target[last] = value
    return document


SLOT = "resources.0.with.0"
INVALID = [
    (change("resources", {}), TypeError, "resources must be a sequence"),
    (change("tasks", 1), TypeError, "tasks must be a sequence"),
    (change("attributes", []), TypeError, "attributes must be a mapping"),
    (change("attributes.other", {}), ValueError, "Extraneous key (other)"),
    (change("version", 2), ValueError, "version must be 1"),
    (change("resources.0", "node"), TypeError, "resource must be a mapping"),
    (change(f"{SLOT}.type", ...), ValueError, "type is a required key for resources"),
    (change(f"{SLOT}.type", 3), TypeError, "type must be a string"),
    (change(f"{SLOT}.count", ...), ValueError, "count is a required key for resources"),
    (change(f"{SLOT}.count", 0), ValueError, "node, slot, or core count must be > 0"),
    (change(f"{SLOT}.count", 1.5), TypeError, "count must be an int or mapping"),
    (change(f"{SLOT}.count", {"max": 2}), ValueError, "min must be in range"),
    (change(f"{SLOT}.count", {"min": 3, "max": 2}), ValueError, "max must be >= min"),
    (
        change(f"{SLOT}.count", {"min": 1, "operand": 2}),
        ValueError,
        "operand and operator must both be in range if either is",
    ),
    (
        change(f"{SLOT}.count", {"min": 1, "operand": 2, "operator": "/"}),
        ValueError,
        "operator must be one of ['+', '*', '^']",
    ),
    (
        change(f"{SLOT}.count", {"min": 1, "operand": 2, "operator": "^"}),
        ValueError,
        "min must be > 1 for '^' operator",
    ),
    (change(f"{SLOT}.count", "1-3:2:/"), ValueError, "operator must be one of ['+', '*', '^']"),
    (change(f"{SLOT}.count", "x"), ValueError, "count string must be a valid idset or range"),
    (change(f"{SLOT}.with.1.count", -1), ValueError, "count must be >= 0"),
    (change(f"{SLOT}.with.1.unit", 4), TypeError, "unit must be a string"),
    (change(f"{SLOT}.exclusive", "yes"), TypeError, "exclusive must be a boolean"),
    (change(f"{SLOT}.with", 5), TypeError, "with must be a sequence"),
    (change(f"{SLOT}.label", ...), ValueError, "slots must have labels"),
    (change("tasks.0", []), TypeError, "task must be a mapping"),
    (change("tasks.0.command", ...), ValueError, "Missing key (command)"),
    (change("tasks.0.command", []), TypeError, "command array cannot have length of zero"),
    (change("tasks.0.command", "hostname"), TypeError, "command must be a list of strings"),
    (change("tasks.0.command", ["a", 1]), TypeError, "command must be a list of strings"),
    (change("tasks.0.count", 1), TypeError, "count must be a mapping"),
    (change("tasks.0.count", {}), ValueError, "count must have exactly one key set"),
    (change("tasks.0.count", {"per_slot": 0}), ValueError, "count per_slot must be > 0"),
    (change("tasks.0.count", {"total": "2"}), TypeError, "count total must be an int"),
    (
        change("tasks.0.count", {"per_resource": 1}),
        ValueError,
        "count per_slot or total must be set",
    ),
    (change("tasks.0.slot", 1), TypeError, "slot must be a string"),
    (change("attributes.system", ...), ValueError, "attributes.system is a required key"),
    (
        change("attributes.system.duration", ...),
        ValueError,
        "attributes.system.duration is a required key",
    ),
    (
        change("attributes.system.duration", "1h"),
        ValueError,
        "attributes.system.duration must be a number",
    ),
    (
        change("attributes.system.dependencies", {}),
        TypeError,
        "attributes.system.dependencies must be a list",
    ),
    (
        change("attributes.system.dependencies", [{"scheme": "afterok"}]),
        ValueError,
        "Missing key (value)",
    ),
    (change("attributes.system.constraints", []), TypeError, "constraints must be a mapping"),
    (
        change("attributes.system.constraints", {"near": ["a"]}),
        TypeError,
        "unknown constraint operator 'near'",
    ),
    (
        change("attributes.system.constraints", {"properties": ["a|b"]}),
        TypeError,
        "invalid character in property 'a|b'",
    ),
    (
        change("attributes.system.constraints", {"not": [{"hostlist": ["n[1-"]}]}),
        ValueError,
        "Invalid hostlist: 'n[1-'",
    ),
    (
        change("attributes.system.constraints", {"ranks": ["3-1"]}),
        ValueError,
        "IDset(): Invalid argument: 3-1",
    ),
]


@pytest.mark.parametrize(("document", "error", "message"), INVALID)
def test_a_bad_jobspec_is_refused_naming_the_rule(
    document: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=exactly(message)):
        JobspecV1.from_yaml_stream(json.dumps(document))


def test_what_the_base_class_allows_and_v1_does_not() -> None:
    with pytest.raises(TypeError, match=exactly("version must be an integer")):
        Jobspec(**change("version", "1"))
    with pytest.raises(ValueError, match=exactly("version must be >= 1")):
        Jobspec(**change("version", 0))
    assert Jobspec(**change("version", 2)).version == 2
    ranged = change(f"{SLOT}.count", "2+")
    assert Jobspec(**ranged).resources[0]["with"][0]["count"] == "2+"
    with pytest.raises(
        ValueError, match=exactly("resource count must be an integer for type 'slot' (got 'str')")
    ):
        JobspecV1(**ranged)
    good = {"and": [{"hostlist": ["n[01-03,7]-ib,login"]}, {"ranks": ["[0-2,5]"]}]}
    constrained = change("attributes.system.constraints", good)
    assert JobspecV1(**constrained).getattr("constraints") == good
    with pytest.raises(ValueError, match=exactly("Missing key (attributes)")):
        Jobspec.from_yaml_stream(json.dumps(change("attributes", ...)))
    with pytest.raises(JobspecError):  # pflux's validator refuses the ranged count as well
        validate(ranged)


def test_converting_a_jobspec_for_submission() -> None:
    jobspec = JobspecV1.from_command(["true"], environment={"É": "1"})
    assert module._convert_jobspec_arg_to_string(jobspec) == jobspec.dumps().encode()
    assert module._convert_jobspec_arg_to_string("{}") == b"{}"
    with pytest.raises(OSError, match="jobspec must not be None/NULL") as info:
        module._convert_jobspec_arg_to_string(None)
    assert info.value.errno == 22
    with pytest.raises(
        TypeError, match=exactly("jobspec must be a Jobspec or string (either binary or unicode)")
    ):
        module._convert_jobspec_arg_to_string(1)
