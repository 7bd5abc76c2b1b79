"""``pflux bulksubmit`` against a live instance: a job per input, each with the
options its inputs made, followed as ``submit`` follows its jobs."""

from __future__ import annotations

import re

from pflux.api import Client
from pflux.spec.fluid import JobID
from support.instance import console, ok, pflux


def test_a_job_per_input_each_with_its_own_options(uri: str, client: Client) -> None:
    out = ok(uri, "bulksubmit", "--job-name=bs-{}", "--env=TAG={seq1}", "sh", "-c",
             "echo {}=$TAG", ":::", "a", "b", "c")  # fmt: skip
    jobids = [JobID.parse(line) for line in out.splitlines()]
    assert len(jobids) == 3
    assert all(client.wait(jobid).success for jobid in jobids)
    names = [client.job_info(jobid, ["name"]).name for jobid in jobids]
    assert names == ["bs-a", "bs-b", "bs-c"]
    outputs = [ok(uri, "job", "attach", jobid.f58) for jobid in jobids]
    assert outputs == ["a=1\n", "b=2\n", "c=3\n"]


def test_stdin_inputs_and_watch(uri: str) -> None:
    out = ok(uri, "bulksubmit", "--quiet", "--watch", "echo", "line:{}", stdin="x\ny\n")
    assert sorted(out.splitlines()) == ["line:x", "line:y"]


def test_wait_exits_with_the_highest_job_exit_code(uri: str) -> None:
    proc = pflux(uri, "bulksubmit", "--wait", "sh", "-c", "kill -{} $$", ":::", "0", "0", "15",
                 script=True)  # fmt: skip
    assert proc.returncode == 143, proc.stderr
    assert len(proc.stdout.split()) == 3
    assert re.search(r"ƒ\w+: task\(s\) Terminated", proc.stderr)


def test_cc_copies_each_input_and_keeps_cc_for_them(uri: str) -> None:
    out = ok(uri, "bulksubmit", "--cc=0-1", "--quiet", "--watch", "sh", "-c",
             "echo {cc}={}:$FLUX_JOB_CC", ":::", "a", "b", script=True)  # fmt: skip
    assert sorted(out.splitlines()) == ["0=a:0", "0=b:0", "1=a:1", "1=b:1"]
    out = ok(uri, "bulksubmit", "--bcc=0-1", "--quiet", "--watch", "sh", "-c",
             "echo {}:$FLUX_JOB_CC.", ":::", "a", script=True)  # fmt: skip
    assert out.splitlines() == ["a:.", "a:."]


def test_an_unsatisfiable_job_fails_the_watch_and_the_rest_run(uri: str) -> None:
    proc = pflux(uri, "bulksubmit", "--watch", "-n", "{}", "true", ":::", "1", "1024",
                 script=True)  # fmt: skip
    assert proc.returncode == 1
    assert len(proc.stdout.split()) == 2
    assert "unsatisfiable request" in proc.stderr


def test_progress_counts_the_submissions(uri: str) -> None:
    proc = console("bulksubmit", "--quiet", "--progress", "true", ":::", *map(str, range(20)),
                   PFLUX_URI=uri)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "20/20" in proc.stderr
    assert proc.stdout == ""
