"""``pflux jobs`` output: flux's format language, every default column, and the command line.

Jobs here are job-list objects written out by hand (``--from-stdin`` reads
them, as flux's own tests do), so the output does not depend on an instance.
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.api import Client
from pflux.cli import jobfields, jobs
from pflux.cli.jobfields import FIELDS, JobInfo, attrs_for, username
from pflux.cli.jobformat import (
    NAMED_FORMATS,
    FormatError,
    JobFormat,
    convert,
    format_value,
    resolve_format,
)
from pflux.errors import PfluxError
from pflux.joblist.attributes import ATTRS
from pflux.spec.duration import format_short as fsd
from pflux.spec.fluid import JobID
from pflux.spec.states import State

NOW = 1_700_000_000.0
UID = os.getuid()
D, P, S, R, C, INA = (int(s) for s in (State.DEPEND, State.PRIORITY, State.SCHED, State.RUN,
                                     State.CLEANUP, State.INACTIVE))  # fmt: skip


@pytest.fixture(autouse=True)
def _fixed_clock_and_utf8_ids(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(time, "time", lambda: NOW)
    monkeypatch.delenv("FLUX_F58_FORCE_ASCII", raising=False)
    monkeypatch.delenv("PFLUX_F58_FORCE_ASCII", raising=False)
    monkeypatch.delenv("PFLUX_JOBS_FORMAT_DEFAULT", raising=False)
    monkeypatch.delenv("FLUX_JOBS_FORMAT_DEFAULT", raising=False)
    jobfields._ASCII_IDS.clear()
    yield
    jobfields._ASCII_IDS.clear()


def job(jobid: int, state: int, **attrs: Any) -> dict[str, Any]:
    base = {"id": jobid, "userid": UID, "urgency": 16, "priority": 16, "state": state}
    return {**base, "t_submit": NOW - 100, "name": "sleep", "ntasks": 1, **attrs}


def ran(jobid: int, result: int, **attrs: Any) -> dict[str, Any]:
    times = {"t_run": NOW - 10, "t_cleanup": NOW - 8.5, "t_inactive": NOW - 8}
    place = {"nnodes": 1, "nodelist": "node0", "ranks": "0"}
    return job(jobid, INA, result=result, success=result == 1, **times, **place, **attrs)


def info(data: dict[str, Any]) -> JobInfo:
    return JobInfo(data)


def field(data: dict[str, Any], name: str) -> Any:
    return JobInfo(data).get(name)


# --- conversions and specs ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.0, "0s"),
        (0.0004, "0s"),
        (0.0123, "0.012s"),
        (1.5, "1.500s"),
        (12.5, "12.5s"),
        (90.0, "1.5m"),
        (5400.0, "1.5h"),
        (2 * 86400.0, "2d"),
        (float("inf"), "inf"),
    ],
)
def test_fsd_as_flux_jobs_prints_it(seconds: float, text: str) -> None:
    assert fsd(seconds) == text


@pytest.mark.parametrize(
    ("value", "conversion", "spec", "text"),
    [
        (NOW, "d", "%Y-%m-%d::>12", f"{time.strftime('%Y-%m-%d', time.localtime(NOW)):>12}"),
        (0.0, "d", "%H:%M::>6h", "     -"),
        ("", "d", "", ""),
        (NOW, "D", "", time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(NOW))),
        (0.0, "D", "", ""),
        (90.0, "F", ">6", "  1.5m"),
        ("", "F", ">6h", "     -"),
        (0.0, "F", "h", "-"),
        (0.5, "H", "", "0:00:01"),
        (3661.2, "H", "", "1:01:01"),
        (0.5, "P", "", "50%"),
        (0.005, "P", "", "0.50%"),
        ("x", "s", ">3", "  x"),
        ("x", "r", "", "'x'"),
    ],
)
def test_conversions(value: Any, conversion: str, spec: str, text: str) -> None:
    assert format_value(convert(value, conversion), spec) == text


@pytest.mark.parametrize(
    ("value", "spec", "text"),
    [
        ("averyverylongname", "<10.10+", "averyvery+"),
        ("short", "<10.10+", "short     "),
        ("", ">4h", "   -"),
        ("0.0", "h", "-"),
        ("0:00:00", "h", "-"),
        ("node0", ">6h", " node0"),
        ("", ">6d", "      "),  # an unset number under a numeric spec keeps its width
        (7, ">3d", "  7"),
    ],
)
def test_spec_suffixes(value: Any, spec: str, text: str) -> None:
    assert format_value(value, spec) == text


# --- the format language --------------------------------------------------------------------


def render(fmt: str, items: list[dict[str, Any]], *, no_header: bool = False) -> list[str]:
    parsed = JobFormat(fmt)
    infos = [info(d) for d in items]
    shown = parsed.filtered(infos, no_header=no_header)
    shown.sort(infos)
    header = [] if no_header else [shown.header()]
    return header + [shown.format(i) for i in infos]


def test_header_keeps_alignment_and_width_only() -> None:
    fmt = "{id.f58:>12} {t_submit!d:%b%d %R::>12} {ntasks:06d} {name:<5.3}|"
    assert JobFormat(fmt).header() == "       JOBID     T_SUBMIT NTASKS NAME |"


def test_question_colon_drops_a_column_empty_for_every_job() -> None:
    fmt = "{name:<5} ?:{queue:<6} {ntasks}"
    assert render(fmt, [job(1, R)]) == ["NAME  NTASKS", "sleep 1"]
    rows = render(fmt, [job(1, R), job(2, R, queue="batch")])
    assert rows == ["NAME  QUEUE  NTASKS", "sleep        1", "sleep batch  1"]


def test_plus_colon_widens_to_the_widest_value_and_heading() -> None:
    fmt = "+:{name:<3.3} {ntasks}"
    rows = render(fmt, [job(1, R, name="ab"), job(2, R, name="abcdefg")])
    assert rows == ["NAME    NTASKS", "ab      1", "abcdefg 1"]
    assert render(fmt, [job(1, R, name="ab")], no_header=True) == ["ab  1"]


def test_question_plus_colon_does_both() -> None:
    fmt = "{id.dec} ?+:{queue:<1} ?+:{cwd}"
    assert render(fmt, [job(1, R, queue="q")]) == ["JOBID QUEUE", "1 q    "]


def test_sort_prefix_and_mixed_values() -> None:
    items = [job(1, R, nnodes=4), job(2, S), job(3, R, nnodes=10), job(4, R, nnodes="3")]
    assert [r.split()[0] for r in render("sort:nnodes {id.dec}", items)[1:]] == list("2413")
    assert [r.split()[0] for r in render("sort:-nnodes {id.dec}", items)[1:]] == list("3142")
    fmt = JobFormat("{id.dec}")
    fmt.set_sort_keys("state,-id")
    infos = [info(d) for d in items]
    fmt.sort(infos)
    assert [i.get("id.dec") for i in infos] == ["4", "3", "1", "2"]


def test_sort_prefix_is_not_output() -> None:
    parsed = JobFormat("sort:-t_submit {id.dec}")
    assert (parsed.sort_keys, parsed.header()) == ([("t_submit", True)], "JOBID")
    assert "t_submit" in parsed.fields


def test_literal_braces() -> None:
    assert render("{{{id.dec}}}", [job(5, R)], no_header=True) == ["{5}"]


@pytest.mark.parametrize(
    ("fmt", "message"),
    [
        ("{bogus}", "Unknown format field: bogus"),
        ("{}", "Unknown format field: "),
        ("{id", "expected '}' before end of string"),
        ("{name!x}", "Unknown conversion specifier x"),
        ("{name:{width}}", "nested fields are not supported"),
        ("sort:bogus {id}", "Invalid sort key: bogus"),
    ],
)
def test_format_errors(fmt: str, message: str) -> None:
    with pytest.raises(FormatError, match=message):
        JobFormat(fmt)


def test_a_bad_spec_is_a_format_error() -> None:
    with pytest.raises(FormatError, match="spec"):
        JobFormat("{name:=}").format(info(job(1, R)))


PIECES = [*"{}:!<>^=.,0123456789dshFHDP?+-x %", "{id", "{name", "{ntasks", "{t_run", "sort:",
          "annotations.", "{state", "!d", "::", "?:", "+:"]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=16).map("".join))
def test_any_format_fails_only_with_a_format_error(text: str) -> None:
    try:
        parsed = JobFormat(text)
        items = [info(job(1, R, t_run=NOW - 5)), info(ran(2, 1))]
        shown = parsed.filtered(items)
        shown.sort(items)
        lines = [shown.header(), *(shown.format(i) for i in items)]
    except FormatError:
        return
    assert all(isinstance(line, str) for line in lines)


def test_named_formats_parse_and_resolve(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, (_, fmt) in NAMED_FORMATS.items():
        assert resolve_format(name) == fmt
        JobFormat(fmt)
    assert resolve_format("{id}") == "{id}"
    monkeypatch.setenv("PFLUX_JOBS_FORMAT_DEFAULT", "long")
    assert resolve_format("default") == NAMED_FORMATS["long"][1]
    monkeypatch.setenv("PFLUX_JOBS_FORMAT_DEFAULT", "{id.dec}")
    assert resolve_format("default") == "{id.dec}"
    with pytest.raises(FormatError, match=r"No such format id \(Did you mean '\{id\}'\?\)"):
        resolve_format("id")


# --- fields -----------------------------------------------------------------------------------


def test_every_field_asks_job_list_only_for_attributes_it_has() -> None:
    for name in FIELDS:
        assert set(attrs_for([name])) <= set(ATTRS), name
    assert attrs_for(["id.f58", "username", "contextual_time"]) == [
        "duration", "state", "t_cleanup", "t_run", "userid",
    ]  # fmt: skip
    assert attrs_for(["sched.reason_pending"]) == ["annotations"]


def test_id_encodings() -> None:
    data = job(6787342413402046, R)
    assert field(data, "id.f58") == "ƒuzzybunny"
    assert f"{field(data, 'id'):>12}" == "  ƒuzzybunny"
    assert f"{field(data, 'id'):d}" == "6787342413402046"
    assert field(data, "id.dec") == "6787342413402046"
    assert field(data, "id.hex") == "0x181d0d4d850fbe"
    assert field(data, "id.dothex") == "0018.1d0d.4d85.0fbe"
    assert field(data, "id.kvs") == "job.0018.1d0d.4d85.0fbe"
    assert field(data, "id.words") == "cake-plume-nepal--neuron-pencil-academy"
    assert field(data, "id.f58plain") == "fuzzybunny"


def test_ids_in_ascii_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PFLUX_F58_FORCE_ASCII", "1")
    jobfields._ASCII_IDS.clear()
    assert field(job(6787342413402046, R), "id.f58") == "fuzzybunny"
    assert str(field(job(6787342413402046, R), "id")) == "fuzzybunny"


def test_username() -> None:
    import pwd

    assert field(job(1, R), "username") == pwd.getpwuid(UID).pw_name
    assert username(4_000_000_000) == "4000000000"
    assert field({"id": 1}, "username") == ""


@pytest.mark.parametrize(
    ("data", "status", "abbrev", "state"),
    [
        (job(1, D), "DEPEND", "D", "DEPEND"),
        (job(1, P), "PRIORITY", "P", "PRIORITY"),
        (job(1, S), "SCHED", "S", "SCHED"),
        (job(1, R), "RUN", "R", "RUN"),
        (job(1, C), "CLEANUP", "C", "CLEANUP"),
        (ran(1, 1), "COMPLETED", "CD", "INACTIVE"),
        (ran(1, 2), "FAILED", "F", "INACTIVE"),
        (ran(1, 4), "CANCELED", "CA", "INACTIVE"),
        (ran(1, 8), "TIMEOUT", "TO", "INACTIVE"),
        ({"id": 1}, "", "", ""),
    ],
)
def test_status_state_and_result(
    data: dict[str, Any], status: str, abbrev: str, state: str
) -> None:
    assert (field(data, "status"), field(data, "status_abbrev")) == (status, abbrev)
    assert field(data, "state") == state
    assert field(data, "state_single") == (state[:1] if state else "")
    inactive = state == "INACTIVE"
    assert field(data, "result") == (status if inactive else "")
    assert field(data, "result_abbrev") == (abbrev if inactive else "")


def test_emoji_fields_fall_back_to_text(monkeypatch: pytest.MonkeyPatch) -> None:
    assert field(job(1, R), "status_emoji") == "\U0001f3c3"
    assert field(ran(1, 1), "status_emoji") == "\U0001f600"
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BytesIO(), encoding="ascii"))
    assert field(job(1, R), "state_emoji") == "R"
    assert field(ran(1, 2), "result_emoji") == ":'-("


def test_runtime_and_time_left() -> None:
    assert field(ran(1, 1), "runtime") == 1.5
    assert field(job(1, R, t_run=NOW - 30), "runtime") == 30.0
    assert field(job(1, S), "runtime") == 0.0
    assert field(job(1, R, t_run=NOW - 30, expiration=NOW + 60), "t_remaining") == 60.0
    assert field(job(1, R, t_run=NOW - 30, expiration=NOW - 60), "t_remaining") == 0.0
    assert field(ran(1, 1, expiration=NOW + 60), "t_remaining") == 0.0


@pytest.mark.parametrize(
    ("data", "code", "reason"),
    [
        (ran(1, 1, waitstatus=0), 0, "Exit 0"),
        (ran(1, 2, waitstatus=3 << 8), 3, "Exit 3"),
        (ran(1, 2, waitstatus=9), -9, "Exit -9"),
        (ran(1, 2, waitstatus=(128 + 9) << 8), 137, "Killed"),
        (ran(1, 2, waitstatus=126 << 8), 126, "Command invoked cannot execute"),
        (ran(1, 2, waitstatus=127 << 8), 127, "command not found"),
        (ran(1, 2, waitstatus=128 << 8), 128, "Invalid argument to exit"),
        (job(1, INA, result=4), -128, "Canceled"),
        (
            job(1, INA, result=4, exception_occurred=True, exception_type="cancel",
                exception_severity=0, exception_note="by admin"),
            -128,
            "Canceled: by admin",
        ),
        (
            job(1, INA, result=2, exception_occurred=True, exception_type="alloc",
                exception_severity=0, exception_note="no resources"),
            1,
            "Exception: type=alloc note=no resources",
        ),
        (ran(1, 8, waitstatus=14), -14, "Timeout"),
        (job(1, R), "", ""),
    ],
)  # fmt: skip
def test_returncode_and_inactive_reason(data: dict[str, Any], code: Any, reason: str) -> None:
    assert field(data, "returncode") == code
    assert field(data, "inactive_reason") == reason


@pytest.mark.parametrize(
    ("data", "text"),
    [
        (job(1, D, dependencies=["after-success=ƒ2", "x=3"]), "depends:after-success=ƒ2,x=3"),
        (job(1, P), "priority-wait"),
        (job(1, S, annotations={"sched": {"t_estimate": NOW + 90}}), "eta:1.5m"),
        (job(1, S, annotations={"sched": {"t_estimate": NOW - 9}}), "eta:now"),
        (job(1, S, urgency=0, priority=0), "held"),
        (job(1, S, priority=0), "priority-hold"),
        (job(1, S, annotations={"sched": {"reason_pending": "no cores"}}), "no cores"),
        (job(1, S, annotations={"sched.reason_pending": "flat key"}), "flat key"),
        (job(1, S), ""),
        (job(1, R, nodelist="node[0-1]"), "node[0-1]"),
        (ran(1, 1), "node0"),
        (job(1, INA, result=4), ""),
    ],
)  # fmt: skip
def test_contextual_info(data: dict[str, Any], text: str) -> None:
    assert field(data, "contextual_info") == text


def test_contextual_time() -> None:
    assert field(job(1, S, duration=60.0), "contextual_time") == 60.0
    assert field(job(1, R, t_run=NOW - 2, duration=60.0), "contextual_time") == 2.0
    assert field(ran(1, 1), "contextual_time") == 1.5


def test_begin_time_dependency_is_shown_as_a_time() -> None:
    today = time.localtime(NOW)
    at = time.mktime((*today[:3], 14, 30, 0, 0, 0, -1))
    deps = [f"begin-time={at:.3f}", f"begin-time={at + 86400 * 3 + 5:.3f}"]
    later = time.strftime("%b%d", time.localtime(at + 86400 * 3))
    assert str(field(job(1, D, dependencies=deps), "dependencies")) == (
        f"begin@14:30,begin@{later}-14:30:05"
    )


def test_annotations_fields() -> None:
    data = job(1, S, annotations={"sched": {"reason_pending": "busy", "n": 2}, "user": {"k": "v"}})
    assert str(field(data, "annotations")) == json.dumps(data["annotations"])
    assert str(field(data, "sched")) == '{"reason_pending": "busy", "n": 2}'
    assert field(data, "sched.reason_pending") == "busy"
    assert field(data, "annotations.sched.n") == 2
    assert field(data, "user.k") == "v"
    assert field(data, "user.missing.deeper") == ""
    assert str(field(job(1, S), "annotations")) == ""
    assert render("{sched.reason_pending} {annotations.user.k}", [data]) == [
        "REASON USER.K", "busy v"
    ]  # fmt: skip


def test_exception_fields() -> None:
    data = ran(1, 2, exception_occurred=True, exception_type="exec", exception_severity=0,
               exception_note="boom")  # fmt: skip
    fields = ("exception.occurred", "exception.type", "exception.severity", "exception.note")
    assert [field(data, f) for f in fields] == [True, "exec", 0, "boom"]
    assert [field(job(1, R), f) for f in fields] == ["", "", "", ""]


def test_json_shape() -> None:
    data = ran(12345, 4, waitstatus=15, exception_occurred=True, exception_type="cancel",
               exception_severity=0, exception_note="", ncores=2, duration=0.0)  # fmt: skip
    shown = info(data).to_dict()
    assert shown == {
        "t_run": NOW - 10, "t_cleanup": NOW - 8.5, "t_inactive": NOW - 8, "duration": 0.0,
        "name": "sleep", "ntasks": 1, "ncores": 2, "nnodes": 1, "priority": 16, "ranks": "0",
        "nodelist": "node0", "success": False, "result": "CANCELED", "waitstatus": 15,
        "id": 12345, "t_submit": NOW - 100, "state": "INACTIVE", "username": username(UID),
        "userid": UID, "urgency": 16, "runtime": 1.5, "status": "CANCELED", "returncode": -15,
        "dependencies": [], "jobid": JobID(12345).f58, "annotations": {},
        "exception": {"occurred": True, "severity": 0, "type": "cancel", "note": ""},
    }  # fmt: skip
    pending = info(job(7, S)).to_dict()
    assert "t_run" not in pending
    assert "runtime" not in pending
    assert pending["exception"] == {"occurred": False}


# --- the command ----------------------------------------------------------------------------


def pflux_jobs(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *args: str,
    stdin: list[dict[str, Any]] | None = None,
) -> tuple[int, str, str]:
    lines = "".join(json.dumps(d) + "\n" for d in stdin or [])
    monkeypatch.setattr(sys, "stdin", io.StringIO(lines))
    argv = [*args, "--from-stdin"] if stdin is not None else list(args)
    rc = jobs.main(argv)
    out, err = capsys.readouterr()
    return rc, out, err


SAMPLE = [
    job(2_000_000_001, D, dependencies=["after-success=ƒ2"], duration=60.0),
    job(2_000_000_002, S, urgency=0, priority=0, name="averyverylongname"),
    job(2_000_000_003, R, t_run=NOW - 30, nnodes=2, ntasks=4, nodelist="node[0-1]"),
    ran(2_000_000_004, 1),
    ran(2_000_000_005, 2, userid=4_000_000_000),
]


def test_default_format_columns(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, _ = pflux_jobs(monkeypatch, capsys, stdin=SAMPLE)
    assert rc == 0
    user = username(UID)
    width = max(8, len(user), len("4000000000"))
    ids = [JobID(d["id"]).f58 for d in SAMPLE]
    expected = [
        f"{'JOBID':>12} {'USER':<{width}} {'NAME':<10} ST NTASKS NNODES     TIME INFO",
        f"{ids[0]:>12} {user:<{width}} sleep       D      1      -       1m depends:after-succ"
        "ess=ƒ2",
        f"{ids[1]:>12} {user:<{width}} averyvery+  S      1      -        - held",
        f"{ids[2]:>12} {user:<{width}} sleep       R      4      2      30s node[0-1]",
        f"{ids[3]:>12} {user:<{width}} sleep      CD      1      1   1.500s node0",
        f"{ids[4]:>12} {'4000000000':<{width}} sleep       F      1      1   1.500s node0",
    ]  # fmt: skip
    assert out.splitlines() == expected


def test_no_header_and_width(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = pflux_jobs(monkeypatch, capsys, "-n", "-w", "20", stdin=SAMPLE[:1])
    assert len(out.rstrip("\n")) == 20
    assert out.rstrip("\n").endswith("+")


def test_queue_column_appears_when_a_job_has_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _, out, _ = pflux_jobs(monkeypatch, capsys, stdin=[*SAMPLE[:2], job(9, S, queue="batch")])
    assert out.splitlines()[0].split()[:3] == ["JOBID", "QUEUE", "USER"]


def test_named_and_custom_formats(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, _ = pflux_jobs(monkeypatch, capsys, "-o", "endreason", stdin=[ran(7, 1, waitstatus=0)])
    assert rc == 0
    assert out.splitlines()[0].split()[-2:] == ["T_INACTIVE", "INACTIVE-REASON"]
    assert out.splitlines()[1].endswith(
        " CD  " + time.strftime("%b%d %H:%M", time.localtime(NOW - 8)) + " Exit 0"
    )
    _, out, _ = pflux_jobs(monkeypatch, capsys, "-o", "{id.dec}:{state_single}", stdin=SAMPLE)
    assert out.splitlines() == [
        "JOBID:S",
        *(f"{d['id']}:{'DSRII'[i]}" for i, d in enumerate(SAMPLE)),
    ]
    _, out, _ = pflux_jobs(monkeypatch, capsys, "--sort=-id", "-no", "{id.dec}", stdin=SAMPLE)
    assert out.split() == [str(d["id"]) for d in reversed(SAMPLE)]


def test_format_help_and_config(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, _ = pflux_jobs(monkeypatch, capsys, "--format=help")
    assert rc == 0
    assert all(name in out for name in NAMED_FORMATS)
    rc, out, _ = pflux_jobs(monkeypatch, capsys, "--format=get-config=deps")
    assert (rc, out.splitlines()[0]) == (0, "[formats.deps]")
    assert NAMED_FORMATS["deps"][1] in out


def test_json(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = pflux_jobs(monkeypatch, capsys, "--json", stdin=SAMPLE[3:])
    assert rc == 0
    shown = json.loads(out)
    assert [j["id"] for j in shown["jobs"]] == [SAMPLE[3]["id"], SAMPLE[4]["id"]]
    assert shown["jobs"][0]["status"] == "COMPLETED"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-o", "{bogus}"], "pflux-jobs: ERROR: Error in user format: Unknown format field: bogus"),
        (["-o", "nope"], "pflux-jobs: ERROR: --format: No such format nope"),
        (["--sort", "x"], "pflux-jobs: ERROR: Invalid sort key: x"),
    ],
)
def test_errors(
    args: list[str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, err = pflux_jobs(monkeypatch, capsys, *args, stdin=SAMPLE)
    assert (rc, out) == (1, "")
    assert err.startswith(message)


def test_bad_stdin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO('{"id": 1}\n[1]\n'))
    assert jobs.main(["--from-stdin"]) == 1
    assert "JSON input error: line 2" in capsys.readouterr().err


# --- what the command asks job-list for -------------------------------------------------------


class FakeHandle:
    """Records job-list requests; answers list with ``jobs`` and list-id from them."""

    def __init__(self, listing: list[dict[str, Any]]) -> None:
        self.listing = listing
        self.requests: list[tuple[str, Any]] = []

    def __enter__(self) -> FakeHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def close(self) -> None:
        return None

    def call(self, topic: str, payload: Any, *args: Any, **kwargs: Any) -> Any:
        self.requests.append((topic, payload))
        limit = payload["max_entries"] or len(self.listing)
        return {"jobs": self.listing[:limit]}

    def rpc(self, topic: str, payload: Any, **kwargs: Any) -> Any:
        import errno

        from pflux.errors import RPCError

        self.requests.append((topic, payload))
        found = [d for d in self.listing if d["id"] == payload["id"]]

        class Reply:
            def get(self, timeout: float | None = None) -> Any:
                if not found:
                    raise RPCError(errno.ENOENT, "not found")
                return {"job": found[0]}

        return Reply()


@pytest.fixture
def handle(monkeypatch: pytest.MonkeyPatch) -> FakeHandle:
    fake = FakeHandle(SAMPLE)
    client = Client.__new__(Client)  # the public API, over the recording handle
    client.handle = fake  # type: ignore[assignment]
    monkeypatch.setattr(jobs, "_connect", lambda args: client)
    return fake


def request(
    handle: FakeHandle,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *args: str,
) -> tuple[dict[str, Any], str]:
    rc, _, err = pflux_jobs(monkeypatch, capsys, *args)
    assert rc == 0, err
    topic, payload = handle.requests[-1]
    assert topic == "job-list.list"
    return payload, err


PENDING_RUNNING = int(State.PENDING | State.RUNNING)
EVERY_STATE = int(State.PENDING | State.RUNNING | State.INACTIVE)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], {"userid": UID, "states": PENDING_RUNNING, "results": 0, "max_entries": 1001}),
        (["-a"], {"userid": UID, "states": EVERY_STATE, "results": 0}),
        (["-A"], {"userid": 4294967295, "states": PENDING_RUNNING}),
        (["-u", "all"], {"userid": 4294967295}),
        (["-u", "4321"], {"userid": 4321}),
        (["-f", "running,FAILED", "-f", "sched"], {"states": R | C | S, "results": 2}),
        (["-c", "0"], {"max_entries": 0}),
        (["--name", "sleep", "-q", "a,b"], {"name": "sleep", "queue": ["a", "b"]}),
        (["--since=-1h"], {"since": NOW - 3600, "states": EVERY_STATE}),
        (["--since", str(NOW - 5), "-f", "failed"], {"since": NOW - 5, "states": 0, "results": 2}),
    ],
)
def test_list_requests(
    args: list[str],
    expected: dict[str, Any],
    handle: FakeHandle,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    payload, _ = request(handle, monkeypatch, capsys, *args)
    assert {key: payload.get(key) for key in expected} == expected


def test_only_the_attributes_the_format_needs(
    handle: FakeHandle, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    payload, _ = request(handle, monkeypatch, capsys, "-o", "{id} {name}")
    assert payload["attrs"] == ["name"]
    payload, _ = request(handle, monkeypatch, capsys, "--json")
    assert payload["attrs"] == ["all"]


def test_truncation_warning(
    handle: FakeHandle, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = pflux_jobs(monkeypatch, capsys, "-c", "2", "-o", "{id.dec}")
    assert (rc, out.split()) == (0, ["JOBID", str(SAMPLE[0]["id"]), str(SAMPLE[1]["id"])])
    assert err.startswith("pflux-jobs: WARNING: output truncated at 2 jobs.\n")
    _, _, err = pflux_jobs(monkeypatch, capsys, "-n", "-c", "2")
    assert err == ""


def test_a_and_filter_warns(
    handle: FakeHandle, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    payload, err = request(handle, monkeypatch, capsys, "-a", "-f", "run")
    assert payload["states"] == R
    assert err == "pflux-jobs: WARNING: Both -a and --filter specified, ignoring -a\n"


def test_job_ids(
    handle: FakeHandle, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    wanted = JobID(SAMPLE[2]["id"])
    rc, out, err = pflux_jobs(monkeypatch, capsys, "-n", "-o", "{id.dec}", wanted.f58, "ƒ2", "-a")
    assert (rc, out) == (0, f"{wanted.dec}\n")
    assert err.splitlines() == [
        "pflux-jobs: WARNING: Filtering options ignored with jobid list",
        "JobID ƒ2 unknown",
    ]
    assert [t for t, _ in handle.requests] == ["job-list.list-id"] * 2
    assert pflux_jobs(monkeypatch, capsys, "ƒ2")[0] == 1
    rc, _, err = pflux_jobs(monkeypatch, capsys, "not-an-id")
    assert rc == 1
    assert "not-an-id" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-f", "bogus"], "Invalid filter specified: bogus"),
        (["-u", "no-such-user-here"], "Invalid user no-such-user-here specified"),
        ([f"--since={NOW + 60}"], f"--since={NOW + 60} appears to be in the future"),
        (["--since", "yesterday-ish"], "--since=yesterday-ish: expected -DURATION"),
        (["--since=-1x"], "invalid Flux standard duration"),
    ],
)
def test_filter_errors(
    args: list[str],
    message: str,
    handle: FakeHandle,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, _, err = pflux_jobs(monkeypatch, capsys, *args)
    assert rc == 1
    assert message in err


def test_since_forms() -> None:
    assert jobs.parse_since("-90s", now=NOW) == NOW - 90
    assert jobs.parse_since("now", now=NOW) == NOW
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(NOW - 60))
    assert jobs.parse_since(stamp, now=NOW) == NOW - 60
    with pytest.raises(PfluxError):
        jobs.parse_since(str(NOW + 1), now=NOW)


def test_suppress_header_is_no_header(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("-o", "{id.dec}", "-a")
    _, plain, _ = pflux_jobs(monkeypatch, capsys, *args, stdin=SAMPLE)
    _, suppressed, _ = pflux_jobs(monkeypatch, capsys, "--suppress-header", *args, stdin=SAMPLE)
    assert plain.splitlines()[0] == "JOBID"
    assert suppressed.splitlines() == plain.splitlines()[1:]
