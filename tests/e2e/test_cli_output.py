"""Small points of the CLI's output that follow flux's: ``-E``/``-v`` in run and attach,
``-T iso`` in local time, a bad format spec refused, and job ids in a C locale."""

from __future__ import annotations

import re
import subprocess

from pflux.api import Client
from pflux.spec.fluid import JobID
from support.instance import PFLUX, console, environ, fails, jobspec, ok

EVENT = r"\d+\.\d{3}s: job\.{name}"


def test_run_verbose_prints_the_jobid(uri: str, client: Client) -> None:
    proc = console("run", "-v", "true", PFLUX_URI=uri)
    assert proc.returncode == 0, proc.stderr
    match = re.fullmatch(r"jobid: (ƒ\w+)\n", proc.stderr)
    assert match, proc.stderr
    assert client.wait(JobID.parse(match[1])).success


def test_run_vv_shows_every_event_finish_included(uri: str) -> None:
    proc = console("run", "-vv", "sh", "-c", "exit 3", PFLUX_URI=uri)
    assert proc.returncode == 3
    lines = proc.stderr.splitlines()
    assert lines[0].startswith("jobid: ")
    assert re.fullmatch(r"\d+\.\d{3}s: job\.submit \{.*\"urgency\":16.*\}", lines[1])
    assert any(re.fullmatch(r"\d+\.\d{3}s: job\.finish \{\"status\":768\}", x) for x in lines)
    assert re.fullmatch(r"\d+\.\d{3}s: job\.clean", lines[-1])
    assert "-v: at most twice" in console("run", "-vvv", "true", PFLUX_URI=uri).stderr


def test_attach_show_events_prints_finish_and_exception_once(uri: str, client: Client) -> None:
    jobid = client.submit(jobspec("0"))
    client.wait_event(jobid, "start")
    client.raise_exception(jobid, "test", note="stop")
    client.wait(jobid)
    err = console("job", "attach", "-E", jobid.f58, PFLUX_URI=uri).stderr
    names = [m[1] for m in re.finditer(r"^\d+\.\d{3}s: job\.(\S+)", err, re.M)]
    assert names[-4:] == ["finish", "release", "free", "clean"]
    assert err.count("type=test") == 1  # the exception's own line, not an event line too


def test_eventlog_iso_is_local_time_with_offset(uri: str, client: Client) -> None:
    jobid = client.submit(jobspec())
    client.wait(jobid)
    proc = console("job", "eventlog", "-T", "iso", jobid.f58, PFLUX_URI=uri, TZ="PST+8")
    first = proc.stdout.splitlines()[0]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}-08:00 submit .*", first)
    utc = console("job", "eventlog", "-T", "iso", jobid.f58, PFLUX_URI=uri, TZ="UTC")
    assert re.match(r"\S+\.\d{6}Z submit", utc.stdout)


def test_jobs_refuses_a_bad_format_spec(uri: str) -> None:
    err = fails(uri, "jobs", "-a", "-o", "{runtime:garbage}")
    assert err == (
        "pflux-jobs: ERROR: Error in user format:"
        " Invalid format specifier 'garbage' for field runtime\n"
    )
    assert ok(uri, "jobs", "-a", "-n", "-o", "{runtime:>8.2f}|{t_run!d:%H::>6}|{id:h}")


def test_job_ids_print_with_ascii_f_in_a_c_locale(uri: str) -> None:
    env = {k: v for k, v in environ().items() if not k.startswith(("PYTHONIOENCODING", "LC_"))}
    env.update(PFLUX_URI=uri, LC_ALL="C", LANG="C")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(PFLUX), *args], capture_output=True, text=True, env=env, timeout=60, check=False
        )

    submitted = run("submit", "--flags=waitable", "true").stdout.strip()
    assert re.fullmatch(r"f\w+", submitted)
    assert run("job", "wait", submitted).returncode == 0
    assert re.fullmatch(r"jobid: f\w+\n", run("run", "-v", "true").stderr)
    listed = run("jobs", "-a", "-n", "-o", "{id}").stdout.split()
    assert submitted in listed
    assert all(jobid.startswith("f") for jobid in listed)
    assert re.fullmatch(r"f\w+\n", run("job", "id", "--to=f58", "1234").stdout)
