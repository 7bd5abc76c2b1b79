"""Decoding and checking the hot-path RPC payloads: hand checks against typed structures.

Measures, per message and per job (ns), the ways a service can turn a payload
into checked values: (a) the hand checks the services use (``isinstance`` /
``type() is`` on the decoded dict), (b) msgspec ``Struct`` types with strict
decoding, from the dict the connector's orjson made (``msgspec.convert``) and
from the raw JSON bytes (``msgspec.json.decode(type=...)``, against orjson's
decode plus the hand checks), (c) dataclasses filled after hand checks, and
(d) pydantic v2 models (validated in strict mode).  A last row times RFC 27's
and RFC 32's messages as ``pflux.protocol`` types them (RFC 32's responses:
the envelope, then its data by type).  A candidate that is not installed is
reported as skipped.  Also the cost of importing msgspec.

    .venv/bin/python bench/bench_protocol.py

The messages are those of one test-mode job: its entry in ``job-manager.submit``,
``sched.alloc`` and its success response, RFC 32's ``job-exec.start`` and its
start, release and finish responses; plus one ``job-list.list`` request. Every
figure is the median of several repeats on one core.
"""

# No ``from __future__ import annotations``: msgspec and pydantic read the
# annotations of the model classes at run time.
import dataclasses
import importlib
import statistics
import subprocess
import sys
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import orjson

U64 = 2**64 - 1
U32 = 2**32 - 1

JOBSPEC = {
    "version": 1,
    "resources": [
        {"type": "slot", "count": 1, "label": "task", "with": [{"type": "core", "count": 1}]}
    ],
    "tasks": [{"command": ["true"], "slot": "task", "count": {"per_slot": 1}}],
    "attributes": {"system": {"duration": 0, "cwd": "/tmp", "environment": {}}},
}
R = {
    "version": 1,
    "execution": {
        "R_lite": [{"rank": "0", "children": {"core": "3"}}],
        "nodelist": ["node0"],
        "starttime": 0.0,
        "expiration": 0.0,
    },
}
JOBID = 3_246_391_214_080
MESSAGES: dict[str, dict[str, Any]] = {
    "submit entry": {
        "id": JOBID,
        "jobspec": JOBSPEC,
        "event": {
            "timestamp": 1.7e9,
            "name": "submit",
            "context": {"userid": 1000, "urgency": 16, "flags": 0, "version": 1},
        },
    },
    "sched.alloc": {
        "id": JOBID,
        "priority": 16,
        "userid": 1000,
        "t_submit": 1.7e9,
        "jobspec": JOBSPEC,
    },
    "alloc response": {
        "id": JOBID,
        "type": 0,
        "R": R,
        "annotations": {"sched": {"resource_summary": "rank0/core3"}},
    },
    "job-exec.start": {"id": JOBID, "userid": 1000, "jobspec": JOBSPEC, "R": R, "reattach": False},
    "start response": {"id": JOBID, "type": "start", "data": {}},
    "release response": {"id": JOBID, "type": "release", "data": {"ranks": "all", "final": True}},
    "finish response": {"id": JOBID, "type": "finish", "data": {"status": 0}},
    "job-list.list": {
        "attrs": ["t_submit", "t_inactive"],
        "max_entries": 0,
        "userid": 1000,
        "states": 0,
        "results": 0,
    },
}
PER_JOB = [name for name in MESSAGES if name != "job-list.list"]


class Bad(Exception):
    pass


# --- (a) the services' hand checks, as written there -----------------------------------


def _jobid(v: Any) -> int:
    if type(v) is not int or not 0 <= v <= U64:
        raise Bad("id")
    return v


def hand_submit(p: Any) -> Any:
    if not isinstance(p, dict):
        raise Bad("payload")
    # job-manager.submit trusts job-ingest: it indexes what it needs
    return p["id"], p["jobspec"], p["event"]["name"], p["event"]["context"]


def hand_alloc(p: Any) -> Any:
    if not isinstance(p, dict):
        raise Bad("payload")
    jobid = _jobid(p.get("id"))
    prio = p.get("priority")
    if type(prio) is not int or not 0 <= prio <= U32:
        raise Bad("priority")
    t = p.get("t_submit", 0.0)
    if isinstance(t, bool) or not isinstance(t, int | float) or not 0 <= t < float("inf"):
        raise Bad("t_submit")
    if not isinstance(p.get("jobspec"), dict):
        raise Bad("jobspec")
    return jobid, prio, t


def hand_alloc_response(p: Any) -> Any:
    p = p if isinstance(p, dict) else {}
    kind = p.get("type")
    ann = p.get("annotations")
    ann = ann if isinstance(ann, dict) and ann else None
    if kind not in (0, 1, 2, 3):
        raise Bad("type")
    return kind, p.get("R"), ann


def hand_start(p: Any) -> Any:
    if not isinstance(p, dict):
        raise Bad("payload")
    jobid, userid, jobspec, reattach, r = (
        p.get("id"),
        p.get("userid"),
        p.get("jobspec"),
        p.get("reattach"),
        p.get("R"),
    )
    if type(jobid) is not int or not 0 <= jobid <= U64 or type(userid) is not int:
        raise Bad("id")
    if not isinstance(jobspec, dict) or not isinstance(r, dict):
        raise Bad("jobspec")
    if not isinstance(reattach, bool):
        raise Bad("reattach")
    return jobid, userid, jobspec, r, reattach


def hand_exec_response(p: Any) -> Any:
    p = p if isinstance(p, dict) else {}
    kind = p.get("type")
    data = p.get("data")
    data = data if isinstance(data, dict) else {}
    if kind not in ("start", "release", "exception", "finish") or p.get("id") != JOBID:
        raise Bad("type")
    if kind == "release":
        ranks = data.get("ranks")
        return kind, ranks if isinstance(ranks, str) else "all", data.get("final") is True
    if kind == "finish":
        status = data.get("status")
        return kind, status if type(status) is int else 0
    return kind, data


def hand_list(p: Any) -> Any:
    if not isinstance(p, dict):
        raise Bad("payload")
    attrs = p.get("attrs", ["all"])
    if not isinstance(attrs, list) or not all(isinstance(a, str) for a in attrs):
        raise Bad("attrs")
    out = [attrs]
    for key, default, lo, hi in (("max_entries", 0, 0, 2**31 - 1), ("userid", -1, -1, U32)):
        v = p.get(key, default)
        if type(v) is not int or not lo <= v <= hi:
            raise Bad(key)
        out.append(v)
    for key in ("states", "results"):
        v = p.get(key, 0)
        if type(v) is not int or v < 0 or v & ~0x7F:
            raise Bad(key)
        out.append(v)
    since = p.get("since", 0.0)
    if type(since) not in (int, float) or since < 0:
        raise Bad("since")
    return out


HAND: dict[str, Callable[[Any], Any]] = {
    "submit entry": hand_submit,
    "sched.alloc": hand_alloc,
    "alloc response": hand_alloc_response,
    "job-exec.start": hand_start,
    "start response": hand_exec_response,
    "release response": hand_exec_response,
    "finish response": hand_exec_response,
    "job-list.list": hand_list,
}


# --- (c) dataclasses filled after the hand checks --------------------------------------


@dataclasses.dataclass(slots=True)
class DcAlloc:
    id: int
    priority: int
    t_submit: float
    jobspec: dict[str, Any]


@dataclasses.dataclass(slots=True)
class DcStart:
    id: int
    userid: int
    jobspec: dict[str, Any]
    R: dict[str, Any]
    reattach: bool


def dc(name: str) -> Callable[[Any], Any]:
    hand = HAND[name]
    if name == "sched.alloc":
        return lambda p: DcAlloc(*hand(p), p["jobspec"])
    if name == "job-exec.start":
        return lambda p: DcStart(*hand(p))
    return hand  # no richer shape than the tuple the checks return


# --- (b) msgspec ------------------------------------------------------------------------


def msgspec_types() -> dict[str, Any]:
    import msgspec
    from msgspec import Meta, Struct

    # msgspec's bounds stop at int64 (it refuses a bound of 2**64 - 1)
    JobId = Annotated[int, Meta(ge=0)]  # noqa: N806 (a type)
    Time = Annotated[float, Meta(ge=0)]  # noqa: N806

    class Event(Struct):
        timestamp: float
        name: str
        context: dict[str, Any] = {}

    class SubmitEntry(Struct):
        id: JobId
        jobspec: dict[str, Any]
        event: Event

    class Alloc(Struct):
        id: JobId
        priority: Annotated[int, Meta(ge=0, le=U32)]
        userid: int
        jobspec: dict[str, Any]
        t_submit: Time = 0.0

    class AllocResponse(Struct):
        id: JobId
        type: Literal[0, 1, 2, 3]
        R: dict[str, Any] | None = None
        annotations: dict[str, Any] = {}
        note: str = ""

    class Start(Struct):
        id: JobId
        userid: int
        jobspec: dict[str, Any]
        R: dict[str, Any]
        reattach: bool

    class Release(Struct):
        ranks: str = "all"
        final: bool = False

    class Finish(Struct):
        status: int = 0

    class Empty(Struct):
        pass

    class StartStart(Struct, tag="start", tag_field="type"):
        id: JobId
        data: Empty

    class StartRelease(Struct, tag="release", tag_field="type"):
        id: JobId
        data: Release

    class StartFinish(Struct, tag="finish", tag_field="type"):
        id: JobId
        data: Finish

    ExecResponse = StartStart | StartRelease | StartFinish  # noqa: N806 (a type)

    class List(Struct):
        attrs: list[str] = msgspec.field(default_factory=lambda: ["all"])
        max_entries: Annotated[int, Meta(ge=0, le=2**31 - 1)] = 0
        userid: Annotated[int, Meta(ge=-1, le=U32)] = -1
        states: Annotated[int, Meta(ge=0, le=0x7F)] = 0
        results: Annotated[int, Meta(ge=0, le=0x7F)] = 0
        since: Time = 0.0

    del msgspec
    return {
        "submit entry": SubmitEntry,
        "sched.alloc": Alloc,
        "alloc response": AllocResponse,
        "job-exec.start": Start,
        "start response": ExecResponse,
        "release response": ExecResponse,
        "finish response": ExecResponse,
        "job-list.list": List,
    }


# --- (d) pydantic -------------------------------------------------------------------------


def pydantic_types() -> dict[str, Any]:
    from pydantic import BaseModel, ConfigDict, Field

    class M(BaseModel):
        model_config = ConfigDict(strict=True)

    class Event(M):
        timestamp: float
        name: str
        context: dict[str, Any] = {}  # noqa: RUF012 (pydantic copies defaults)

    class SubmitEntry(M):
        id: int = Field(ge=0, le=U64)
        jobspec: dict[str, Any]
        event: Event

    class Alloc(M):
        id: int = Field(ge=0, le=U64)
        priority: int = Field(ge=0, le=U32)
        userid: int
        jobspec: dict[str, Any]
        t_submit: float = Field(0.0, ge=0)

    class AllocResponse(M):
        id: int = Field(ge=0, le=U64)
        type: Literal[0, 1, 2, 3]
        R: dict[str, Any] | None = None
        annotations: dict[str, Any] = {}  # noqa: RUF012
        note: str = ""

    class Start(M):
        id: int = Field(ge=0, le=U64)
        userid: int
        jobspec: dict[str, Any]
        R: dict[str, Any]
        reattach: bool

    class ExecResponse(M):
        id: int = Field(ge=0, le=U64)
        type: Literal["start", "release", "exception", "finish"]
        data: dict[str, Any]

    class List(M):
        attrs: list[str] = ["all"]  # noqa: RUF012
        max_entries: int = Field(0, ge=0, le=2**31 - 1)
        userid: int = Field(-1, ge=-1, le=U32)
        states: int = Field(0, ge=0, le=0x7F)
        results: int = Field(0, ge=0, le=0x7F)
        since: float = Field(0.0, ge=0)

    return {
        "submit entry": SubmitEntry,
        "sched.alloc": Alloc,
        "alloc response": AllocResponse,
        "job-exec.start": Start,
        "start response": ExecResponse,
        "release response": ExecResponse,
        "finish response": ExecResponse,
        "job-list.list": List,
    }


# --- measuring ----------------------------------------------------------------------------


def ns(func: Callable[[], object], repeats: int = 7) -> float:
    """Nanoseconds a call: the median of ``repeats`` runs of about 0.2 s each."""
    number, _ = timeit.Timer(func).autorange()
    runs = timeit.Timer(func).repeat(repeat=repeats, number=number)
    return statistics.median(runs) / number * 1e9


def have(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def import_ms(module: str) -> float:
    """Milliseconds a fresh interpreter spends importing ``module`` (median of 5)."""
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    runs = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], check=True, capture_output=True, text=True
            ).stdout
        )
        for _ in range(5)
    ]
    return statistics.median(runs) * 1000


def _hand(f: Callable[[Any], Any], bytes_in: bool) -> Callable[[bytes, Any], Callable[[], object]]:
    if bytes_in:
        return lambda b, d: lambda: f(orjson.loads(b))
    return lambda b, d: lambda: f(d)


def _convert(kind: Any) -> Callable[[bytes, Any], Callable[[], object]]:
    import msgspec

    return lambda b, d: lambda: msgspec.convert(d, kind, strict=True)


def _exec_response(data: bytes, payload: Any) -> Callable[[], object]:
    import msgspec

    from pflux.protocol.exec import DATA, StartResponse

    convert = msgspec.convert

    def decode() -> object:
        envelope = convert(payload, StartResponse, strict=True)
        return convert(envelope.data, DATA[envelope.type], strict=True)

    return decode


def _decoder(kind: Any) -> Callable[[bytes, Any], Callable[[], object]]:
    import msgspec

    decoder = msgspec.json.Decoder(kind)
    return lambda b, d: lambda: decoder.decode(b)


def _pydantic(kind: Any, bytes_in: bool) -> Callable[[bytes, Any], Callable[[], object]]:
    from pydantic import TypeAdapter

    adapter = TypeAdapter(kind)
    if bytes_in:
        return lambda b, d: lambda: adapter.validate_json(b)
    return lambda b, d: lambda: adapter.validate_python(d)


def candidates() -> dict[str, dict[str, Callable[[bytes, Any], Callable[[], object]]]]:
    """For each candidate and message: a maker of the call to time, given the bytes and dict."""
    out: dict[str, dict[str, Callable[[bytes, Any], Callable[[], object]]]] = {}
    out["hand checks (dict)"] = {n: _hand(f, False) for n, f in HAND.items()}
    out["orjson + hand checks (bytes)"] = {n: _hand(f, True) for n, f in HAND.items()}
    out["dataclass + hand checks (dict)"] = {n: _hand(dc(n), False) for n in HAND}
    if have("msgspec"):
        types = msgspec_types()
        out["msgspec convert strict (dict)"] = {n: _convert(t) for n, t in types.items()}
        out["msgspec json.decode (bytes)"] = {n: _decoder(t) for n, t in types.items()}
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
        from pflux.protocol.exec import StartRequest
        from pflux.protocol.sched import AllocReply, AllocRequest

        # as pflux.protocol has them: documents typed Any and checked to be objects,
        # RFC 32's responses as the envelope and then its data by type
        out["pflux.protocol convert (dict)"] = {
            "sched.alloc": _convert(AllocRequest),
            "alloc response": _convert(AllocReply),
            "job-exec.start": _convert(StartRequest),
            "start response": _exec_response,
            "release response": _exec_response,
            "finish response": _exec_response,
        }
    if have("pydantic"):
        ptypes = pydantic_types()
        out["pydantic strict (dict)"] = {n: _pydantic(t, False) for n, t in ptypes.items()}
        out["pydantic from JSON (bytes)"] = {n: _pydantic(t, True) for n, t in ptypes.items()}
    return out


def main() -> None:
    raw = {name: orjson.dumps(p) for name, p in MESSAGES.items()}
    rows = candidates()
    names = list(MESSAGES)
    print("ns per message; 'job' = the seven messages of one test-mode job")
    print(f"{'candidate':32}" + "".join(f"{n[:14]:>15}" for n in names) + f"{'job':>9}")
    for cand, makers in rows.items():
        figures = {n: ns(makers[n](raw[n], MESSAGES[n])) for n in makers}
        cells = "".join(f"{figures[n]:15,.0f}" if n in figures else f"{'-':>15}" for n in names)
        job = f"{sum(figures[n] for n in PER_JOB):9,.0f}" if len(figures) == len(names) else ""
        print(f"{cand:32}{cells}{job}")
    for module in ("orjson", "msgspec", "msgspec.json", "pydantic"):
        if have(module):
            print(f"import {module}: {import_ms(module):.1f} ms")
    print("skipped:", ", ".join(m for m in ("msgspec", "pydantic") if not have(m)) or "none")


if __name__ == "__main__":
    main()
