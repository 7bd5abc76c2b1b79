"""Options that had no test of their own, each shown to take effect against a live
instance (the suite's, tests/conftest.py; ``start``'s in instances of their own)."""

from __future__ import annotations

import re
import subprocess

from pflux.api import Client
from pflux.spec.fluid import JobID
from support.instance import PFLUX, console, environ, held, ok, pflux

# ------------------------------------------------------------------ start


def test_start_gpus_and_verbose() -> None:
    env = {k: v for k, v in environ().items() if k not in ("PFLUX_URI", "FLUX_URI")}
    proc = subprocess.run(
        [str(PFLUX), "start", "-v", "--cores", "1", "--gpus", "2", str(PFLUX), "resource",
         "list", "-no", "{ncores} {ngpus}"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split()[:2] == ["1", "2"]
    assert "instance ready at local://" in proc.stderr  # -v: INFO on stderr


# ------------------------------------------------------------------ submit


def test_submit_cc_and_bcc(uri: str) -> None:
    script = "echo {cc}-${FLUX_JOB_CC:-none}"
    cc = ok(uri, "submit", "--cc=1-2", "--watch", "sh", "-c", script, script=True)
    assert sorted(cc.splitlines()[2:]) == ["1-1", "2-2"]  # the jobs run side by side
    bcc = ok(uri, "submit", "--bcc=1-2", "--watch", "sh", "-c", script, script=True)
    assert sorted(bcc.splitlines()[2:]) == ["1-none", "2-none"]


def test_submit_quiet_watch_and_progress(uri: str, client: Client) -> None:
    assert ok(uri, "submit", "--cc=1-2", "--quiet", "true", script=True) == ""
    watched = ok(uri, "submit", "--watch", "echo", "watched", script=True).splitlines()
    assert re.fullmatch(r"ƒ\w+", watched[0])
    assert watched[1:] == ["watched"]
    proc = console("submit", "--cc=1-2", "--progress", "--wait", "true", PFLUX_URI=uri)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "pflux: WARNING: stdout is not a tty. Ignoring --progress option\n"


def test_run_show_events(uri: str) -> None:
    proc = console("run", "-E", "true", PFLUX_URI=uri)
    assert proc.returncode == 0
    assert re.search(r"^\d+\.\d{3}s: job\.finish \{\"status\":0\}$", proc.stderr, re.M)


# ------------------------------------------------------------------ job


def test_job_urgency_verbose(uri: str, client: Client) -> None:
    jobid = held(client)
    proc = pflux(uri, "job", "urgency", "-v", jobid.f58, "10")
    assert (proc.returncode, proc.stderr) == (0, "old urgency: job held\n")
    assert client.wait(jobid).success


def test_wait_event_and_kvs_eventlog_human(uri: str, client: Client) -> None:
    jobid = JobID.parse(ok(uri, "submit", "true"))
    client.wait(jobid)
    human = r"\[[A-Z][a-z]{2}\d\d \d\d:\d\d\] "
    out = ok(uri, "job", "wait-event", "-H", jobid.f58, "submit")
    assert re.fullmatch(rf"{human}submit .*\n", out)
    key = ok(uri, "job", "id", "--to=kvs", jobid.f58).strip()
    lines = ok(uri, "kvs", "eventlog", "get", "-H", f"{key}.eventlog").splitlines()
    assert re.fullmatch(rf"{human}submit .*", lines[0])
    assert re.fullmatch(r"\[ +\+\d+\.\d{6}\] validate", lines[1])


def test_attach_stdin_ranks(uri: str) -> None:
    jobid = ok(uri, "submit", "-n2", "cat").strip()
    proc = console("job", "attach", "-l", "-i", "1", jobid, stdin="hello\n", PFLUX_URI=uri)
    assert (proc.returncode, proc.stdout) == (0, "1: hello\n")


def test_attach_read_only_forwards_nothing(uri: str) -> None:
    jobid = ok(uri, "submit", "sh", "-c", "echo started; cat; echo end").strip()
    env = environ(PFLUX_URI=uri)
    with subprocess.Popen(
        [str(PFLUX), "job", "attach", "-r", jobid],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
    ) as reader:  # fmt: skip
        assert reader.stdin is not None
        assert reader.stdout is not None
        reader.stdin.write("ignored\n")
        reader.stdin.close()  # without -r this would be the job's input and its end
        assert reader.stdout.readline() == "started\n"
        # the job still waits for input: another attach gives it some, and its end
        other = console("job", "attach", jobid, stdin="given\n", PFLUX_URI=uri)
        assert other.stdout == "started\ngiven\nend\n"
        assert reader.stdout.read() == "given\nend\n"
        assert reader.wait(timeout=60) == 0


# ------------------------------------------------------------------ queue


def test_queue_all_quiet_and_verbose(uri: str, client: Client) -> None:
    alloc = ["0 alloc requests queued", "0 alloc requests pending to scheduler", "0 running jobs"]
    client.drain()
    try:
        assert ok(uri, "queue", "stop", "--all") == "Scheduling is stopped\n"
        assert not client.queue_status().start
        assert ok(uri, "queue", "stop", "-v").splitlines()[1:] == alloc
        assert ok(uri, "queue", "disable", "--all", "-v").splitlines()[1:] == alloc
        assert not client.queue_status().enable
        assert ok(uri, "queue", "enable", "-v").splitlines()[1:] == alloc
        assert ok(uri, "queue", "start", "--quiet") == ""
        assert client.queue_status().start
        assert ok(uri, "queue", "stop", "--quiet") == ""
        assert not client.queue_status().start
    finally:
        assert ok(uri, "queue", "start", "--all") == "Scheduling is started\n"
        ok(uri, "queue", "enable")
    assert ok(uri, "queue", "start", "-v").splitlines()[1:] == alloc
