"""``pflux job ...`` end to end against one live instance.

The instance is ``pflux start`` running a shell that prints its URI and waits
on stdin; closing stdin ends it. Jobs are set up through the Python API and
run in test mode (no process) unless a test needs real output. Commands run
in this process through the ``pflux`` dispatcher (a process each would cost
0.1 s of start-up), and a few through the real console script. The instance and
the helpers are the suite's (tests/conftest.py, tests/support/instance.py).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import yaml

from pflux.api import Client
from pflux.spec.fluid import JobID
from support.instance import fails, held, jobspec, ok, pflux

UID = os.getuid()


# ------------------------------------------------------------------ helpers


def finished(client: Client, *, waitable: bool = False, **test: Any) -> JobID:
    jobid = client.submit(jobspec(**test), waitable=waitable)
    client.wait(jobid)
    return jobid


def names(text: str) -> list[str]:
    return [line.split()[1] for line in text.splitlines()]


# ------------------------------------------------------------------ job submit


def test_submit_json_file_prints_f58_id(uri: str, client: Client, tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(jobspec()))
    out = ok(uri, "job", "submit", str(path), script=True)
    assert out.startswith("ƒ")
    jobid = JobID.parse(out)
    assert client.wait(jobid).success


def test_submit_yaml_stdin_with_urgency_and_flags(uri: str, client: Client) -> None:
    out = ok(
        uri, "job", "submit", "--urgency=hold", "-f", "debug,waitable", stdin=yaml.dump(jobspec())
    )
    jobid = JobID.parse(out)
    submit = client.wait_event(jobid, "submit")
    assert submit.context is not None
    assert submit.context["urgency"] == 0
    assert submit.context["flags"] == 3
    client.cancel(jobid)


def test_submit_errors(uri: str, tmp_path: Path) -> None:
    assert "unknown flag: novalidate" in fails(uri, "job", "submit", "-f", "novalidate", "x")
    assert "required jobspec is empty" in pflux(uri, "job", "submit", stdin="").stderr
    missing = tmp_path / "missing.json"
    assert f"{missing}: No such file or directory" in fails(uri, "job", "submit", str(missing))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"version": 1}))
    err = fails(uri, "job", "submit", str(bad))
    assert err.startswith("pflux-job: ERROR: invalid jobspec")


# ------------------------------------------------------------------ job eventlog


def test_eventlog_text_json_and_time_formats(uri: str, client: Client) -> None:
    jobid = finished(client)
    text = ok(uri, "job", "eventlog", str(jobid), script=True)
    assert names(text)[0] == "submit"
    assert names(text)[-1] == "clean"
    first = text.splitlines()[0]
    assert re.fullmatch(rf"\d+\.\d{{6}} submit urgency=16 userid={UID} flags=0 version=1", first), (
        first
    )
    stored = ok(uri, "job", "info", str(jobid), "eventlog")
    raw = ok(uri, "job", "eventlog", "--format=json", str(jobid))
    assert [json.loads(line) for line in raw.splitlines()] == [
        json.loads(line) for line in stored.splitlines() if line
    ]
    offsets = ok(uri, "job", "eventlog", "-T", "offset", str(jobid)).splitlines()
    assert offsets[0].startswith("0.000000 submit")
    iso = ok(uri, "job", "eventlog", "-T", "iso", str(jobid)).splitlines()
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z submit", iso[0])
    human = ok(uri, "job", "eventlog", "-H", str(jobid)).splitlines()
    assert re.match(r"\[\w+ ?\d+ \d\d:\d\d\] submit", human[0]), human[0]
    assert all(line.startswith("[") for line in human)


def test_eventlog_accepts_every_encoding(uri: str, client: Client) -> None:
    jobid = finished(client)
    expected = ok(uri, "job", "eventlog", jobid.f58)
    for form in (jobid.dec, jobid.hex, jobid.dothex, jobid.kvs, jobid.words, jobid.f58plain):
        assert ok(uri, "job", "eventlog", form) == expected


def test_eventlog_errors(uri: str) -> None:
    err = fails(uri, "job", "eventlog", "0", script=True)
    assert err == "pflux-job: ERROR: job ƒ1 not found\n"
    assert "'bogus' is not a valid job id" in fails(uri, "job", "eventlog", "bogus")
    assert pflux(uri, "job", "eventlog").returncode == 2  # usage


def test_eventlog_follow_ends_with_clean(uri: str, client: Client) -> None:
    jobid = client.submit(jobspec("0.2s"))
    out = ok(uri, "job", "eventlog", "-F", str(jobid))
    events = names(out)
    assert events[0] == "submit"
    assert events[-1] == "clean"
    assert events.index("start") < events.index("finish")


def test_eventlog_guest_paths_of_a_real_job(uri: str, client: Client) -> None:
    spec = jobspec()
    spec["tasks"][0]["command"] = ["sh", "-c", "echo hello; echo oops >&2"]
    del spec["attributes"]["system"]["exec"]
    spec["attributes"]["system"]["cwd"] = "/"
    jobid = client.submit(spec)
    followed = ok(uri, "job", "eventlog", "--follow", "-p", "exec", str(jobid))
    assert names(followed)[-1] == "done"
    assert ok(uri, "job", "eventlog", "-p", "guest.exec.eventlog", str(jobid)) == followed
    output = ok(uri, "job", "eventlog", "-p", "output", str(jobid))
    assert 'data stream="stdout" rank="0" data="hello\\n"' in output
    assert ok(uri, "job", "eventlog", "-F", "-p", "output", str(jobid)) == output
    err = fails(uri, "job", "eventlog", "-p", "input", str(jobid))
    assert err == "pflux-job: ERROR: eventlog path guest.input not found\n"
    line = ok(uri, "job", "wait-event", "-p", "output", "-m", "stream=stderr", str(jobid), "data")
    assert 'data="oops\\n"' in line


# ------------------------------------------------------------------ job wait-event


def test_wait_event_prints_the_match(uri: str, client: Client) -> None:
    jobid = finished(client)
    out = ok(uri, "job", "wait-event", str(jobid), "finish")
    assert re.fullmatch(r"\d+\.\d{6} finish status=0\n", out)
    assert ok(uri, "job", "wait-event", "-q", str(jobid), "clean") == ""
    verbose = ok(uri, "job", "wait-event", "-v", str(jobid), "start")
    assert names(verbose)[0] == "submit"
    assert names(verbose)[-1] == "start"
    offset = ok(uri, "job", "wait-event", "-T", "offset", str(jobid), "clean")
    assert not offset.startswith("0.000000")  # counted from submit, not from itself
    raw = ok(uri, "job", "wait-event", "-f", "json", str(jobid), "finish")
    assert json.loads(raw)["context"] == {"status": 0}


def test_wait_event_match_and_count(uri: str, client: Client) -> None:
    jobid = held(client)
    client.raise_exception(jobid, "test", 7, "one")
    client.raise_exception(jobid, "test", 7, "two")
    second = ok(uri, "job", "wait-event", "-c", "2", str(jobid), "exception")
    assert 'note="two"' in second
    assert 'note="two"' in ok(uri, "job", "wait-event", "-m", "note=two", str(jobid), "exception")
    assert 'note="one"' in ok(uri, "job", "wait-event", "-m", "severity=7", str(jobid), "exception")
    assert "count must be > 0" in fails(uri, "job", "wait-event", "-c", "0", str(jobid), "x")
    err = fails(uri, "job", "wait-event", "-m", "novalue", str(jobid), "exception")
    assert "must specify a context test as key=value" in err
    client.cancel(jobid)


def test_wait_event_timeout_and_never_received(uri: str, client: Client) -> None:
    jobid = held(client)
    err = fails(uri, "job", "wait-event", "-t", "0.1s", str(jobid), "start")
    assert err == "pflux-job: ERROR: wait-event timeout on event 'start'\n"
    client.cancel(jobid)
    err = fails(uri, "job", "wait-event", str(jobid), "start")
    assert err == "pflux-job: ERROR: event 'start' never received\n"
    assert fails(uri, "job", "wait-event", "0", "start") == "pflux-job: ERROR: job ƒ1 not found\n"


def test_wait_event_refuses_waitcreate(uri: str, client: Client) -> None:
    jobid = finished(client)
    for flag in ("-W", "--waitcreate"):
        proc = pflux(uri, "job", "wait-event", flag, str(jobid), "finish")
        assert proc.returncode == 2
        assert proc.stdout == ""
        assert proc.stderr == (
            "pflux-job: ERROR: --waitcreate: not supported: pflux always waits for the log"
            " to be created, with or without it\n"
        )


# ------------------------------------------------------------------ job info


def test_info_keys(uri: str, client: Client) -> None:
    spec = jobspec()
    jobid = finished(client)
    js, r = ok(uri, "job", "info", str(jobid), "jobspec", "R").splitlines()
    assert json.loads(js)["tasks"] == spec["tasks"]
    assert json.loads(r)["execution"]["R_lite"][0]["rank"] == "0"
    eventlog = ok(uri, "job", "info", str(jobid), "eventlog")
    assert eventlog.endswith("\n\n")  # the log's own newline, then flux's
    signed = ok(uri, "job", "info", str(jobid), "J").strip()
    assert signed.endswith(".none")
    original = ok(uri, "job", "info", "--original", str(jobid), "jobspec")
    assert json.loads(original) == json.loads(js)


def test_info_applies_jobspec_updates_unless_base(uri: str, client: Client) -> None:
    jobid = held(client)
    client.handle.call(
        "job-manager.update", {"id": int(jobid), "updates": {"attributes.system.duration": 60}}
    )
    current = json.loads(ok(uri, "job", "info", str(jobid), "jobspec"))
    assert current["attributes"]["system"]["duration"] == 60
    base = json.loads(ok(uri, "job", "info", "--base", str(jobid), "jobspec"))
    assert base["attributes"]["system"]["duration"] == 0
    client.cancel(jobid)


def test_info_errors(uri: str, client: Client) -> None:
    jobid = held(client)
    assert "has no R" in fails(uri, "job", "info", str(jobid), "R")
    assert "unknown key 'bogus'" in fails(uri, "job", "info", str(jobid), "bogus")
    assert fails(uri, "job", "info", "0", "jobspec") == "pflux-job: ERROR: job ƒ1 not found\n"
    client.cancel(jobid)


# ------------------------------------------------------------------ job urgency


def test_urgency_names_and_verbose(uri: str, client: Client) -> None:
    jobid = held(client)
    client.queue_start(False, "urgency test")  # so that the job stays pending
    try:
        urgency_changes(uri, client, jobid)
    finally:
        client.queue_start(True)


def urgency_changes(uri: str, client: Client, jobid: JobID) -> None:
    proc = pflux(uri, "job", "urgency", "-v", str(jobid), "default")
    assert (proc.returncode, proc.stderr) == (0, "old urgency: job held\n")
    assert pflux(uri, "job", "urgency", "-v", str(jobid), "EXPEDITE").stderr == (
        "old urgency: 16\n"
    )
    assert pflux(uri, "job", "urgency", "-v", str(jobid), "hold").stderr == (
        "old urgency: job expedited\n"
    )
    ok(uri, "job", "urgency", str(jobid), "7")
    assert client.wait_event(jobid, "urgency", match={"urgency": 7}).name == "urgency"
    err = fails(uri, "job", "urgency", str(jobid), "foo")
    assert err == 'pflux-job: ERROR: error parsing urgency: "foo"\n'
    err = fails(uri, "job", "urgency", str(jobid), "40")
    assert err == (
        f"pflux-job: ERROR: {jobid.f58}: job-manager.urgency: urgency: expected int <= 31\n"
    )
    client.cancel(jobid)
    client.wait(jobid)
    assert "is inactive" in fails(uri, "job", "urgency", str(jobid), "16")


# ------------------------------------------------------------------ job raise, cancel, kill


def test_raise_type_severity_and_note(uri: str, client: Client) -> None:
    jobid = held(client)
    ok(uri, "job", "raise", "-s", "5", "-t", "test", str(jobid), "a", "note")
    event = client.wait_event(jobid, "exception", match={"type": "test"})
    assert event.context == {"type": "test", "severity": 5, "note": "a note"}
    ok(uri, "job", "raise", "-s", "6", str(jobid), "--", "42")
    client.wait_event(jobid, "exception", match={"note": "42", "type": "cancel"})
    err = fails(uri, "job", "raise", "-m", "x", str(jobid), "y")
    assert "Do not set note on command line and with --message" in err
    assert "'xyz' is not a valid job id" in fails(uri, "job", "raise", "xyz", "bar")
    ok(uri, "job", "cancel", str(jobid), "bye")
    cancel = client.wait_event(jobid, "exception", match={"note": "bye"})
    assert cancel.context is not None
    assert (cancel.context["type"], cancel.context["severity"]) == ("cancel", 0)
    client.wait(jobid)
    assert f"job {jobid.f58} is inactive" in fails(uri, "job", "raise", str(jobid))


def test_kill_signals_a_running_job(uri: str, client: Client) -> None:
    jobid = client.submit(jobspec("0"))  # runs until killed
    client.wait_event(jobid, "start")
    assert fails(uri, "job", "kill", "-s", "SIGFAKE", str(jobid)) == (
        "pflux-job: ERROR: kill: Invalid signal SIGFAKE\n"
    )
    assert "Invalid signal 0" in fails(uri, "job", "kill", "-s", "0", str(jobid))
    ok(uri, "job", "kill", "-s", "USR1", str(jobid))
    finish = client.wait_event(jobid, "finish")
    assert finish.context == {"status": 10}
    assert pflux(uri, "job", "status", str(jobid), script=True).returncode == 138
    pending = held(client)
    assert f"job {pending.f58} is not running" in fails(uri, "job", "kill", str(pending))
    client.cancel(pending)


# ------------------------------------------------------------------ job wait, job status


def test_wait_for_one_job(uri: str, client: Client) -> None:
    good = finished(client, waitable=True)
    assert pflux(uri, "job", "wait", str(good)).returncode == 0
    bad = finished(client, waitable=True, wait_status=256)
    err = fails(uri, "job", "wait", str(bad), script=True)
    assert err == "pflux-job: ERROR: task(s) exited with exit code 1\n"
    assert fails(uri, "job", "wait", "0", rc=2, script=True) == (
        "pflux-job: ERROR: invalid job id, or job may be inactive and not waitable\n"
    )
    assert "jobid not supported with --all" in fails(uri, "job", "wait", "--all", str(good))


def test_status_exit_codes(uri: str, client: Client) -> None:
    good = finished(client)
    one = finished(client, wait_status=256)
    three = finished(client, wait_status=768)
    assert pflux(uri, "job", "status", str(good)).returncode == 0
    proc = pflux(uri, "job", "status", "-v", str(good), str(one), str(three))
    assert proc.returncode == 3
    assert proc.stderr.splitlines() == [
        "pflux-job: fetching status for 3 jobs",
        "pflux-job: all done.",
        f"pflux-job: {one}: exited with exit code 1",
        f"pflux-job: {three}: exited with exit code 3",
    ]
    canceled = held(client)
    client.cancel(canceled)
    proc = pflux(uri, "job", "status", "-vv", str(canceled))
    assert (proc.returncode, proc.stderr) == (1, f"pflux-job: {canceled}: exception type=cancel\n")
    assert pflux(uri, "job", "status", "-e", "42", str(canceled)).returncode == 42
    assert fails(uri, "job", "status", "0") == "pflux-job: ERROR: job ƒ1 not found\n"


def test_status_json(uri: str, client: Client) -> None:
    jobid = held(client)
    client.raise_exception(jobid, "test", 1, "minor")
    client.raise_exception(jobid, "test2", 2, "less")
    client.urgency(jobid, "default")
    client.wait(jobid)
    result = json.loads(ok(uri, "job", "status", "--json", str(jobid)))
    assert result["id"] == int(jobid)
    assert result["waitstatus"] == 0
    assert result["result"] == 1  # COMPLETED
    assert (result["exception_type"], result["exception_severity"]) == ("test", 1)
    assert result["t_submit"] < result["t_run"] < result["t_cleanup"]


# ------------------------------------------- job list, list-inactive, list-ids


def test_job_list_commands_print_job_list_s_answers_one_a_line(uri: str, client: Client) -> None:
    done = finished(client)
    waiting = held(client)
    pending = [json.loads(line) for line in ok(uri, "job", "list").splitlines()]
    assert waiting in [job["id"] for job in pending]
    assert done not in [job["id"] for job in pending]
    assert {job["state"] for job in pending} <= {2, 4, 8, 16, 32}
    everything = [json.loads(line)["id"] for line in ok(uri, "job", "list", "-a").splitlines()]
    assert {done, waiting} <= set(everything)
    assert ok(uri, "job", "list", "-s", "inactive", "-c", "1", "-A").count("\n") == 1
    assert ok(uri, "job", "list", "-u", str(UID)) == ok(uri, "job", "list")
    assert ok(uri, "job", "list", "-u", "all", "-s", "sched") == ok(uri, "job", "list", "-s", "S")
    inactive = [json.loads(line) for line in ok(uri, "job", "list-inactive").splitlines()]
    assert done in [job["id"] for job in inactive]
    assert {job["state"] for job in inactive} == {64}
    assert ok(uri, "job", "list-inactive", "--since", "4e9") == ""
    byid = [json.loads(line) for line in ok(uri, "job", "list-ids", str(done)).splitlines()]
    assert [(job["id"], job["state"]) for job in byid] == [(done, 64)]
    byid = ok(uri, "job", "list-ids", "-W", "sched", str(waiting))
    assert json.loads(byid)["id"] == waiting
    assert "error parsing --states: bogus is unknown" in fails(uri, "job", "list", "-s", "bogus")
    assert "invalid job state specified" in fails(uri, "job", "list-ids", "-W", "x", str(done))
    client.cancel(waiting)
