"""A user's text (a job name, an exception note, a memo, a drain or stop reason)
reaches every human-readable listing with its non-printing characters escaped: a
newline forges no row, an escape sequence reaches no terminal. JSON keeps it exact."""

from __future__ import annotations

import json

import pytest

from support.instance import ok

EVIL = "evil\n\x1b[2J\x1b]0;owned\x07\x9b\u202e"
SHOWN = "evil\\n\\x1b[2J\\x1b]0;owned\\x07\\x9b\\u202e"


def printable_lines(text: str) -> list[str]:
    lines = text.splitlines()
    for line in lines:
        assert line.isprintable(), repr(line)
    return lines


@pytest.fixture(scope="module")
def evil_job(uri: str) -> str:
    jobid = ok(uri, "submit", "--urgency=hold", f"--job-name={EVIL}", "true").strip()
    ok(uri, "job", "raise", "--severity=1", "--type=test", f"--message={EVIL}", jobid)
    ok(uri, "job", "memo", jobid, f"k{EVIL}=v{EVIL}")
    return jobid


def test_pflux_jobs_shows_the_name_escaped_on_its_own_row(uri: str, evil_job: str) -> None:
    assert printable_lines(ok(uri, "jobs", "-a", "-n", "-o", "{name}")) == [SHOWN]
    assert len(printable_lines(ok(uri, "jobs", "-a"))) == 2  # the heading and the job
    for fmt in ("long", "endreason", "deps"):
        assert len(printable_lines(ok(uri, "jobs", "-a", "-n", f"--format={fmt}"))) == 1
    [job] = json.loads(ok(uri, "jobs", "-a", "--json"))["jobs"]
    assert job["name"] == EVIL  # JSON keeps the exact string


def test_pstree_and_pgrep_show_it_escaped(uri: str, evil_job: str) -> None:
    tree = printable_lines(ok(uri, "pstree", "-a"))
    assert any(SHOWN in line for line in tree)
    assert printable_lines(ok(uri, "pgrep", "-a", "-n", "evil", "-o", "{name}")) == [SHOWN]


def test_the_eventlog_as_text_escapes_notes_and_memos_and_as_json_keeps_them(
    uri: str, evil_job: str
) -> None:
    lines = printable_lines(ok(uri, "job", "eventlog", evil_job))
    human = printable_lines(ok(uri, "job", "eventlog", "-H", evil_job))
    assert len(lines) == len(human)
    as_json = ok(uri, "job", "eventlog", "-f", "json", evil_job)
    events = [json.loads(line) for line in as_json.splitlines()]
    assert len(events) == len(lines)
    exception = next(e for e in events if e["name"] == "exception")
    assert exception["context"]["note"] == EVIL
    memo = next(e for e in events if e["name"] == "memo")
    assert memo["context"] == {f"k{EVIL}": f"v{EVIL}"}


def test_job_info_prints_the_same_json_with_nothing_raw(uri: str, evil_job: str) -> None:
    text = ok(uri, "job", "info", evil_job, "jobspec", "eventlog")
    jobspec, *events = printable_lines(text)
    assert json.loads(jobspec)["attributes"]["system"]["job"]["name"] == EVIL
    assert any(json.loads(line).get("context", {}).get("note") == EVIL for line in events)


def test_drain_and_stop_reasons_show_escaped(uri: str) -> None:
    ok(uri, "resource", "drain", "0", EVIL)
    try:
        drained = printable_lines(ok(uri, "resource", "drain", "-n", "-o", "{reason}"))
        assert drained == [SHOWN]
        assert any(SHOWN in line for line in printable_lines(ok(uri, "dmesg")))
    finally:
        ok(uri, "resource", "undrain", "0")
    ok(uri, "queue", "stop", f"--message={EVIL}")
    try:
        status = printable_lines(ok(uri, "queue", "status"))
        assert f"Scheduling is stopped: {SHOWN}" in status
    finally:
        ok(uri, "queue", "start")
