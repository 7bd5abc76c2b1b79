"""The job shell's options through ``pflux run``/``submit``: each takes effect, or is refused.

``rlimit``, ``env-expand``, ``cpu-affinity``, ``exit-timeout``, ``exit-on-error``,
``verbose`` and ``--signal`` as flux-core's shell does them; unknown options and
flux's options pflux lacks are refused at submission, naming the option.
"""

from __future__ import annotations

import os
import resource
import socket

import pytest

from pflux.api import Client, jobspec_of
from pflux.errors import PfluxError
from pflux.spec.fluid import JobID
from support.instance import fails, ok, pflux

CPUS = "grep Cpus_allowed_list /proc/self/status | cut -f2"


def run(uri: str, *args: str) -> tuple[int, str, str]:
    proc = pflux(uri, "run", *args)
    return proc.returncode, proc.stdout, proc.stderr


# ---------------------------------------------------------------------------- rlimit


def test_rlimit_applies_to_the_tasks_and_not_to_the_next_job(uri: str) -> None:
    assert ok(uri, "run", "--rlimit=nofile=64", "sh", "-c", "ulimit -n") == "64\n"
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    # the submitting process's soft limit is passed on by default; the shell kept none
    assert ok(uri, "run", "sh", "-c", "ulimit -n") == f"{soft}\n"


def test_a_limit_above_the_hard_limit_is_cut_to_it_with_a_warning(uri: str) -> None:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard == resource.RLIM_INFINITY:
        pytest.skip("no hard limit on open files here")
    rc, out, err = run(uri, f"--rlimit=nofile={hard + 1}", "sh", "-c", "ulimit -n")
    assert (rc, out) == (0, f"{hard}\n")
    assert (
        "flux-shell[0]:  WARN: rlimit: nofile exceeds current max, raising value to hard limit"
        in err
    )


def test_a_bad_rlimit_option_is_refused(uri: str) -> None:
    err = fails(uri, "submit", "--dry-run", "-o", "rlimit.nofile=many", "true")
    assert "attributes.system.shell.options.rlimit: nofile: must be an integer" in err


# ------------------------------------------------------------------------ env-expand


def test_env_templates_are_expanded_per_job_and_per_task(uri: str) -> None:
    script = 'echo "$FLUX_TASK_RANK $ID $HEX $T $D $FLUX_JOB_TMPDIR $X"'
    out = ok(
        uri,
        "run",
        "-n2",
        "--env=ID={{id}}",
        "--env=HEX={{id.hex}}",
        "--env=T=task{{taskid}}-{{size}}",
        "--env=D={{tmpdir}}/x",
        "--env=X={{bogus}}",
        "sh",
        "-c",
        script,
    )
    lines = sorted(line.split() for line in out.splitlines())
    assert [line[0] for line in lines] == ["0", "1"]
    for rank, jobid, hexid, task, tmp, tmpdir, unknown in lines:
        assert JobID.parse(jobid).encode("hex") == hexid
        assert task == f"task{rank}-2"
        assert tmp == f"{tmpdir}/x"
        assert unknown == "{{bogus}}"  # an unknown tag is left as it is, as in flux-core
    assert lines[0][1] == lines[1][1]


# ---------------------------------------------------------------------- cpu-affinity


def test_by_default_every_task_is_bound_to_all_the_jobs_cores(uri: str) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs two CPUs")
    out = ok(uri, "run", "-n2", "--label-io", "sh", "-c", CPUS)
    both = f"{cpus[0]}-{cpus[1]}" if cpus[1] == cpus[0] + 1 else f"{cpus[0]},{cpus[1]}"
    assert sorted(out.splitlines()) == [f"0: {both}", f"1: {both}"]
    per_task = ok(uri, "run", "-n2", "--label-io", "-o", "cpu-affinity=per-task", "sh", "-c", CPUS)
    assert sorted(per_task.splitlines()) == [f"0: {cpus[0]}", f"1: {cpus[1]}"]


def test_cpu_affinity_off_and_map(uri: str) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs two CPUs")
    assert ok(uri, "run", "sh", "-c", CPUS) == f"{cpus[0]}\n"  # the job's one core
    off = ok(uri, "run", "-o", "cpu-affinity=off", "sh", "-c", CPUS)
    assert off.strip() != str(cpus[0])  # the shell's CPUs, all of the instance's
    mapped = ok(uri, "run", "-o", f"cpu-affinity=map:{cpus[1]}", "sh", "-c", CPUS)
    assert mapped == f"{cpus[1]}\n"


def test_a_bad_cpu_affinity_is_refused(uri: str) -> None:
    err = fails(uri, "submit", "--dry-run", "-o", "cpu-affinity=sometimes", "true")
    assert "shell.options.cpu-affinity: 'sometimes' is not one of on, off, per-task" in err
    err = fails(uri, "submit", "--dry-run", "-o", "cpu-affinity=map:x", "true")
    assert "cpu-affinity: cpuset x contains no cores or is invalid" in err


# ---------------------------------------------------------- exit-timeout, exit-on-error


def test_exit_timeout_raises_a_fatal_exception(uri: str) -> None:
    host = socket.gethostname()
    script = 'test "$FLUX_TASK_RANK" = 1 && exec sleep 60; exit 0'
    rc, _, err = run(uri, "-n2", "-o", "exit-timeout=0.5s", "sh", "-c", script)
    assert rc != 0
    note = f"sh: task rank 0 on host {host} exited (Exit 0) and exit-timeout=0.5s has expired"
    assert "type=exec severity=0 " + note in err


def test_exit_on_error_ends_the_job_at_the_first_failure(uri: str) -> None:
    host = socket.gethostname()
    script = 'test "$FLUX_TASK_RANK" = 1 && exec sleep 60; exit 3'
    rc, _, err = run(uri, "-n2", "-o", "exit-on-error", "sh", "-c", script)
    assert rc != 0
    note = f"sh: task rank 0 on host {host} failed (Exit 3) and exit-on-error is set"
    assert "type=exec severity=0 " + note in err


@pytest.mark.parametrize("option", ["exit-on-error", "exit-timeout=0.5s"])
def test_the_failing_tasks_signal_is_the_jobs_status(client: Client, uri: str, option: str) -> None:
    """As flux-core's shell dies with the task's status, the other tasks' SIGTERM aside."""
    script = 'test "$FLUX_TASK_RANK" = 1 && kill -SEGV $$; exec sleep 60'
    jobid = JobID.parse(ok(uri, "submit", "-n2", "-o", option, "sh", "-c", script).strip())
    assert client.wait_event(jobid, "finish").context["status"] == (128 + 11) << 8
    note = client.wait_event(jobid, "exception").context["note"]
    assert "task rank 1 on host" in note
    assert "(Segmentation fault)" in note


def test_an_exit_code_above_128_is_told_as_a_signal(uri: str) -> None:
    rc, _, err = run(uri, "sh", "-c", "exit 200")
    assert rc == 200
    assert err.endswith("-job: task(s) Unknown signal 72\n")


def test_exit_timeout_none_and_a_bad_value(uri: str) -> None:
    # rank 1 outlives rank 0 by far more than a zero timeout would allow
    script = 'test "$FLUX_TASK_RANK" = 1 && sleep 1; exit 0'
    assert ok(uri, "run", "-n2", "-o", "exit-timeout=none", "sh", "-c", script) == ""
    err = fails(uri, "submit", "--dry-run", "-o", "exit-timeout=soon", "true")
    assert '"soon" is not a valid Flux Standard Duration' in err


# ---------------------------------------------------------------------------- verbose


def test_verbose_prints_the_shells_diagnostics(uri: str) -> None:
    rc, _, err = run(uri, "-n2", "-o", "verbose", "true")
    assert rc == 0
    assert (
        "flux-shell[0]: DEBUG: 0: task_count=2 slot_count=2 cores_per_slot=1 slots_per_node=-1"
        in err
    )
    assert "flux-shell[0]: DEBUG: 0: tasks [0-1] on cores 0-1" in err
    _, _, quiet = run(uri, "true")
    assert "flux-shell" not in quiet


# ----------------------------------------------------------------------------- signal


def test_signal_before_the_time_limit(uri: str) -> None:
    script = 'trap "echo warned; exit 0" USR1; sleep 60 & wait'
    out = ok(uri, "run", "-t", "1m", "--signal=SIGUSR1@59s", "sh", "-c", script)
    assert out == "warned\n"


def test_signal_is_rearmed_when_the_time_limit_moves(client: Client, uri: str) -> None:
    script = 'trap "echo warned; exit 0" USR2; sleep 300 & wait'
    jobid = JobID.parse(
        ok(uri, "submit", "-t", "10m", "--signal=USR2@1m", "sh", "-c", script).strip()
    )
    client.wait_event(jobid, "start")
    ok(uri, "update", str(jobid), "duration=61s")
    assert ok(uri, "job", "attach", str(jobid)) == "warned\n"


def test_signal_option_value(uri: str) -> None:
    out = ok(uri, "submit", "--dry-run", "--signal=", "true")
    assert '"signal": {"signum": 10, "timeleft": 60.0}' in out
    err = fails(uri, "submit", "--dry-run", "--signal=SIGNOPE@1m", "true")
    assert "--signal=SIGNOPE@1m: SIGNOPE is not a valid signal" in err


# ---------------------------------------------------------------------------- refusal


def test_unknown_and_unsupported_options_are_refused(client: Client, uri: str) -> None:
    err = fails(uri, "submit", "--dry-run", "-o", "bogus", "true")
    assert "attributes.system.shell.options.bogus: unknown shell option" in err
    err = fails(uri, "run", "-o", "stage-in", "true")
    assert "shell.options.stage-in: not supported by pflux" in err
    jobspec = jobspec_of(["true"])
    jobspec["attributes"]["system"]["shell"] = {"options": {"bogus": 1}}
    with pytest.raises(PfluxError, match=r"shell\.options\.bogus: unknown shell option"):
        client.submit(jobspec)
