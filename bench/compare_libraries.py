"""Measure the candidate libraries for decoding and validating jobspecs against each other.

Run it in a scratch virtual environment that has every candidate, e.g.::

    python3 -m venv /tmp/cmpvenv
    /tmp/cmpvenv/bin/pip install pyyaml ruamel.yaml orjson ujson msgspec \\
        jsonschema fastjsonschema pydantic
    /tmp/cmpvenv/bin/python bench/compare_libraries.py

A candidate that is not installed is reported as skipped.  Every figure is the
median of several repeats on one core; ``errors`` says how many problems a
validator reports for a jobspec that has five (only all of them will do).
"""

# No ``from __future__ import annotations`` here: msgspec and pydantic read the
# annotations of the function-local model classes below at run time.
import contextlib
import functools
import importlib
import json
import statistics
import subprocess
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from support import rfc25

ROOT = Path(__file__).resolve().parent.parent
SCHEMA_PATH = ROOT / "src" / "pflux" / "spec" / "jobspec_v1.schema.json"

# RFC 25's main example, the test suite's copy (tests/data/rfc25)
EXAMPLE_YAML = rfc25.text()


@functools.cache
def example_json() -> bytes:
    """The example as JSON, made on first use: the msgspec and pydantic first-use rows
    time importing this module, which must not import PyYAML."""
    return json.dumps(rfc25.example()).encode()


@functools.cache
def broken_json() -> bytes:
    """The example with five problems (``rfc25.broken``) as JSON."""
    return json.dumps(rfc25.broken()).encode()


def rate(func: Callable[[], object], repeats: int = 7) -> float:
    """Calls per second: the median of ``repeats`` runs of about 0.2 s each."""
    number, _ = timeit.Timer(func).autorange()
    runs = timeit.Timer(func).repeat(repeat=repeats, number=number)
    return number / statistics.median(runs)


def first_use(setup: str, action: str) -> float:
    """Milliseconds a fresh interpreter spends on ``setup`` then one ``action``."""
    code = (
        "import time, sys\n"
        f"sys.path.insert(0, {str(ROOT / 'src')!r}); sys.path.insert(0, {str(ROOT / 'bench')!r})\n"
        "t0 = time.perf_counter()\n"
        f"{setup}\n{action}\n"
        "print((time.perf_counter() - t0) * 1000)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout
    return float(out)


def have(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def row(name: str, per_second: float | None, note: str = "") -> None:
    if per_second is None:
        print(f"| {name:44} | {'skipped':>10} | {'':>8} | {note}")
    else:
        micro = 1e6 / per_second
        print(f"| {name:44} | {per_second:10,.0f} | {micro:8.1f} | {note}")


def header(title: str, note: str = "notes") -> None:
    print(f"\n### {title}\n")
    print(f"| {'candidate':44} | {'per s':>10} | {'µs each':>8} | {note}")
    print(f"|{'-' * 46}|{'-' * 12}|{'-' * 10}|------")


# ------------------------------------------------------------------ candidates


def json_decoders() -> None:
    header("JSON decode (RFC 25 example, bytes)")
    data = example_json()
    row("json (stdlib)", rate(lambda: json.loads(data)))
    for name, module, attr in (
        ("orjson", "orjson", "loads"),
        ("ujson", "ujson", "loads"),
        ("msgspec.json (untyped)", "msgspec.json", "decode"),
    ):
        if not have(module):
            row(name, None, "not installed")
            continue
        func = getattr(importlib.import_module(module), attr)
        row(name, rate(lambda f=func: f(data)))


def yaml_decoders() -> None:
    header("YAML decode (RFC 25 example, text)")
    import yaml

    c_loader = getattr(yaml, "CSafeLoader", None)
    if c_loader is None:
        row("PyYAML CSafeLoader", None, "libyaml not available")
    else:
        row("PyYAML CSafeLoader", rate(lambda: yaml.load(EXAMPLE_YAML, Loader=c_loader)))
    row(
        "PyYAML SafeLoader (pure Python)",
        rate(lambda: yaml.load(EXAMPLE_YAML, Loader=yaml.SafeLoader)),
    )
    from pflux.spec import jobspec

    row(
        "pflux decode (CSafeLoader + duplicate-key check)",
        rate(lambda: jobspec.decode(EXAMPLE_YAML, fmt="yaml")),
    )
    if have("ruamel.yaml"):
        from ruamel.yaml import YAML

        safe = YAML(typ="safe")  # libyaml-based where ruamel's C extension is present
        row("ruamel.yaml typ=safe", rate(lambda: safe.load(EXAMPLE_YAML)))
        round_trip = YAML()
        row("ruamel.yaml typ=rt (default)", rate(lambda: round_trip.load(EXAMPLE_YAML)))
    else:
        row("ruamel.yaml", None, "not installed")


def _msgspec_types() -> Any:
    """RFC 25's schema as msgspec structs (tagged unions on ``type``)."""
    import msgspec
    from msgspec import UNSET, Meta, Struct, UnsetType, field

    positive = Annotated[int, Meta(ge=1)]

    class Core(Struct, tag_field="type", tag="core", forbid_unknown_fields=True):
        count: positive
        unit: str | UnsetType = UNSET

    class Gpu(Struct, tag_field="type", tag="gpu", forbid_unknown_fields=True):
        count: Annotated[int, Meta(ge=0)]
        unit: str | UnsetType = UNSET

    class Slot(Struct, tag_field="type", tag="slot", forbid_unknown_fields=True):
        count: positive
        label: str
        with_: Annotated[list[Core | Gpu], Meta(min_length=1, max_length=2)] = field(name="with")
        unit: str | UnsetType = UNSET
        exclusive: bool | UnsetType = UNSET

    class Node(Struct, tag_field="type", tag="node", forbid_unknown_fields=True):
        count: positive
        with_: Annotated[list[Slot], Meta(min_length=1, max_length=1)] = field(name="with")
        unit: str | UnsetType = UNSET
        exclusive: bool | UnsetType = UNSET

    class TaskCount(Struct, forbid_unknown_fields=True):
        per_slot: positive | UnsetType = UNSET
        total: positive | UnsetType = UNSET

    class Task(Struct, forbid_unknown_fields=True):
        command: Annotated[list[str], Meta(min_length=1)]
        slot: str
        count: TaskCount

    class System(Struct):
        duration: Annotated[float, Meta(ge=0)]
        cwd: str | UnsetType = UNSET
        environment: dict[str, str] | UnsetType = UNSET

    class Attributes(Struct, forbid_unknown_fields=True):
        system: System
        user: dict[str, Any] | UnsetType = UNSET

    class Spec(Struct, forbid_unknown_fields=True):
        version: Literal[1]
        resources: Annotated[list[Node | Slot], Meta(min_length=1, max_length=1)]
        tasks: Annotated[list[Task], Meta(min_length=1, max_length=1)]
        attributes: Attributes

    return msgspec.json.Decoder(Spec)


def _pydantic_adapter() -> Any:
    """RFC 25's schema as pydantic models (strict, discriminated on ``type``)."""
    from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

    strict = ConfigDict(extra="forbid", strict=True)

    class Core(BaseModel):
        model_config = strict
        type: Literal["core"]
        count: int = Field(ge=1)
        unit: str | None = None

    class Gpu(BaseModel):
        model_config = strict
        type: Literal["gpu"]
        count: int = Field(ge=0)
        unit: str | None = None

    class Slot(BaseModel):
        model_config = strict
        type: Literal["slot"]
        count: int = Field(ge=1)
        label: str
        with_: list[Annotated[Core | Gpu, Field(discriminator="type")]] = Field(
            alias="with", min_length=1, max_length=2
        )
        unit: str | None = None
        exclusive: bool | None = None

    class Node(BaseModel):
        model_config = strict
        type: Literal["node"]
        count: int = Field(ge=1)
        with_: list[Slot] = Field(alias="with", min_length=1, max_length=1)
        unit: str | None = None
        exclusive: bool | None = None

    class TaskCount(BaseModel):
        model_config = strict
        per_slot: int | None = Field(default=None, ge=1)
        total: int | None = Field(default=None, ge=1)

    class Task(BaseModel):
        model_config = strict
        command: list[str] = Field(min_length=1)
        slot: str
        count: TaskCount

    class System(BaseModel):
        model_config = ConfigDict(extra="allow", strict=True)
        duration: float = Field(ge=0)
        cwd: str | None = None
        environment: dict[str, str] | None = None

    class Attributes(BaseModel):
        model_config = strict
        system: System
        user: dict[str, Any] | None = None

    class Spec(BaseModel):
        model_config = strict
        version: Literal[1]
        resources: list[Annotated[Node | Slot, Field(discriminator="type")]] = Field(
            min_length=1, max_length=1
        )
        tasks: list[Task] = Field(min_length=1, max_length=1)
        attributes: Attributes

    return TypeAdapter(Spec)


def quietly(func: Callable[[], object], errors: type[Exception]) -> Callable[[], None]:
    """``func`` with the rejection it is expected to raise swallowed, for timing."""

    def call() -> None:
        with contextlib.suppress(errors):
            func()

    return call


def reported(func: Callable[[], object], count: Callable[[Any], int]) -> str:
    """How many problems ``func``'s exception reports."""
    try:
        func()
    except Exception as exc:
        return str(count(exc))
    return "0"


def schema_validators() -> tuple[Any, Any]:
    """RFC 25's schema as a jsonschema Draft7Validator and a fastjsonschema function."""
    schema = json.loads(SCHEMA_PATH.read_text())
    draft7 = compiled = None
    if have("jsonschema"):
        import jsonschema

        draft7 = jsonschema.Draft7Validator(schema)
    if have("fastjsonschema"):
        import fastjsonschema

        compiled = fastjsonschema.compile(schema)
    return draft7, compiled


def validators() -> None:
    from pflux.errors import JobspecError
    from pflux.spec import jobspec
    from pflux.spec.jobspec import walker

    draft7, compiled = schema_validators()
    valid, invalid = rfc25.example(), rfc25.broken()
    header("Validate a decoded dict (valid example / example with 5 errors)", "errors reported")
    if draft7 is None:
        row("jsonschema", None, "not installed")
    else:
        row("jsonschema Draft7Validator.is_valid, valid", rate(lambda: draft7.is_valid(valid)))
        row(
            "jsonschema iter_errors, invalid",
            rate(lambda: list(draft7.iter_errors(invalid))),
            f"{len(list(draft7.iter_errors(invalid)))} (a failed oneOf hides its branch's errors)",
        )
    if compiled is None:
        row("fastjsonschema", None, "not installed")
    else:
        import fastjsonschema

        row("fastjsonschema compiled, valid", rate(lambda: compiled(valid)))
        errors = fastjsonschema.JsonSchemaException
        row(
            "fastjsonschema compiled, invalid",
            rate(quietly(lambda: compiled(invalid), errors)),
            "1",
        )
    if have("msgspec"):
        import msgspec

        spec = _msgspec_types().type
        row(
            "msgspec.convert to typed structs, valid",
            rate(lambda: msgspec.convert(valid, spec, strict=True)),
            "(the schema only: accepts what pflux rejects, see README)",
        )
    else:
        row("msgspec", None, "not installed")
    row("pflux validate (fast accept), valid", rate(lambda: jobspec.validate(valid)))
    row("pflux walker alone, valid", rate(lambda: walker.collect(valid)))
    row(
        "pflux validate (walker), invalid",
        rate(quietly(lambda: jobspec.validate(invalid), JobspecError)),
        reported(lambda: jobspec.validate(invalid), lambda e: len(e.problems)),
    )


def pipelines() -> None:
    import orjson

    from pflux.errors import JobspecError
    from pflux.spec import jobspec

    good, bad = example_json(), broken_json()
    draft7, compiled = schema_validators()
    header("Decode + validate from JSON bytes (valid example / example with 5 errors)", "errors")
    if compiled is not None and draft7 is not None:
        import fastjsonschema

        def hybrid(data: bytes) -> list[Any]:
            """Fast accept; on rejection, collect every error with jsonschema."""
            doc = orjson.loads(data)
            try:
                compiled(doc)
            except fastjsonschema.JsonSchemaException:
                return list(draft7.iter_errors(doc))
            return []

        row("orjson + fastjsonschema, valid", rate(lambda: hybrid(good)))
        row(
            "orjson + fastjsonschema, then jsonschema, invalid",
            rate(lambda: hybrid(bad)),
            str(len(hybrid(bad))),
        )
    if have("msgspec"):
        import msgspec

        decoder = _msgspec_types()
        row("msgspec typed structs, valid", rate(lambda: decoder.decode(good)))
        row(
            "msgspec typed structs, invalid",
            rate(quietly(lambda: decoder.decode(bad), msgspec.ValidationError)),
            "1",
        )
    else:
        row("msgspec", None, "not installed")
    if have("pydantic"):
        import pydantic

        adapter = _pydantic_adapter()
        row("pydantic v2 strict models, valid", rate(lambda: adapter.validate_json(good)))
        row(
            "pydantic v2 strict models, invalid",
            rate(quietly(lambda: adapter.validate_json(bad), pydantic.ValidationError)),
            reported(lambda: adapter.validate_json(bad), lambda e: e.error_count()),
        )
    else:
        row("pydantic", None, "not installed")
    row("pflux loads (orjson + fast accept), valid", rate(lambda: jobspec.loads(good)))
    row(
        "pflux loads (orjson + walker), invalid",
        rate(quietly(lambda: jobspec.loads(bad), JobspecError)),
        reported(lambda: jobspec.loads(bad), lambda e: len(e.problems)),
    )


def first_use_cases() -> tuple[tuple[str, str, str], ...]:
    """(row, setup, action) for ``first_use``."""
    return (
        ("import orjson + decode", "import orjson", "orjson.loads(b'{}')"),
        (
            "import yaml + CSafeLoader decode",
            "import yaml",
            "yaml.load('a: 1', Loader=yaml.CSafeLoader)",
        ),
        (
            "import ruamel.yaml + safe decode",
            "from ruamel.yaml import YAML",
            "YAML(typ='safe').load('a: 1')",
        ),
        (
            "import fastjsonschema + compile RFC schema",
            "import fastjsonschema, json",
            f"fastjsonschema.compile(json.load(open({str(SCHEMA_PATH)!r})))",
        ),
        (
            "import jsonschema + Draft7Validator + 1 check",
            "import jsonschema, json",
            f"jsonschema.Draft7Validator(json.load(open({str(SCHEMA_PATH)!r}))).is_valid({{}})",
        ),
        (
            "import msgspec + define structs",
            "import compare_libraries as c",
            "c._msgspec_types()",
        ),
        (
            "import pydantic + build models",
            "import compare_libraries as c",
            "c._pydantic_adapter()",
        ),
        (
            "import pflux.spec.jobspec + loads (JSON)",
            "from pflux.spec import jobspec",
            f"jobspec.loads({example_json()!r})",
        ),
        (
            "import pflux.spec.jobspec + loads (YAML)",
            "from pflux.spec import jobspec",
            f"jobspec.loads({EXAMPLE_YAML!r})",
        ),
    )


def first_use_costs() -> None:
    print("\n### First use: import + first call in a fresh interpreter (start-up excluded)\n")
    print(f"| {'what':44} | {'ms':>8} |")
    print(f"|{'-' * 46}|{'-' * 10}|")
    for name, setup, action in first_use_cases():
        try:
            times = [first_use(setup, action) for _ in range(5)]
        except subprocess.CalledProcessError:
            print(f"| {name:44} | {'skipped':>8} |")
            continue
        print(f"| {name:44} | {statistics.median(times):8.1f} |")


def main() -> None:
    print(f"python {sys.version.split()[0]} on {sys.platform}; {time.strftime('%Y-%m-%d')}")
    json_decoders()
    yaml_decoders()
    validators()
    pipelines()
    first_use_costs()


if __name__ == "__main__":
    main()
