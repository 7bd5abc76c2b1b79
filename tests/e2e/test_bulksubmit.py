"""``pflux bulksubmit`` against a live instance: a job per input, each with the
options its inputs made, followed as ``submit`` follows its jobs."""

from __future__ import annotations

import re
from pathlib import Path

from pflux.api import Client
from pflux.spec.fluid import JobID
from support.instance import ok, pflux
from support.terminal import Terminal


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
    with Terminal(uri, "bulksubmit", "--quiet", "--progress", "true", ":::", *map(str, range(20)),
                  size=(10, 50)) as term:  # fmt: skip
        assert term.wait() == 0
        last = term.text.rsplit("\033[r\0338", 1)[1]
    assert last.startswith("Submitting 20 jobs: \u2502")
    assert "100.0%" in last
    assert "\u0192" not in term.text


def test_log_files_take_ids_messages_and_output(uri: str, tmp_path: Path) -> None:
    log, err = tmp_path / "job{cc}.out", tmp_path / "job{cc}.err"
    proc = pflux(uri, "submit", f"--log={log}", f"--log-stderr={err}", "--cc=0-1", "--watch",
                 "sh", "-c", "echo out; echo oops >&2; exit 2", script=True)  # fmt: skip
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", "")
    for cc in (0, 1):
        lines = (tmp_path / f"job{cc}.out").read_text().splitlines()
        assert re.fullmatch(r"ƒ\w+", lines[0])
        assert lines[1:] == ["out"]
        errors = (tmp_path / f"job{cc}.err").read_text().splitlines()
        assert sorted(errors) == sorted(["oops", f"{lines[0]}: task(s) exited with exit code 2"])
    ok(uri, "bulksubmit", f"--log={tmp_path}/{{}}-{{cc}}.log", "--cc=0-1", "--watch",
       "echo", "{cc}={}", ":::", "a", "b", script=True)  # fmt: skip
    assert (tmp_path / "a-1.log").read_text().splitlines()[1:] == ["1=a"]
    proc = pflux(uri, "submit", "--log=/nonexistent/x", "true")
    assert (proc.returncode, proc.stderr) == (
        1,
        "pflux-submit: ERROR: /nonexistent/x: No such file or directory\n",
    )


def test_verbose_logs_each_end_and_every_event(uri: str) -> None:
    proc = pflux(uri, "bulksubmit", "-v", "--wait", "sh", "-c", "exit {}", ":::", "0", "3",
                 script=True)  # fmt: skip
    assert proc.returncode == 3
    lines = proc.stdout.splitlines()
    assert lines[:2] == ["bulksubmit: submit sh -c exit 0", "bulksubmit: submit sh -c exit 3"]
    first, second = lines[2:]
    assert re.search(rf"^{first}: \d+\.\d{{3}}s: complete: status=0$", proc.stderr, re.M)
    assert re.search(rf"^{second}: \d+\.\d{{3}}s: failed: status=768$", proc.stderr, re.M)
    proc = pflux(uri, "submit", "-vv", "--wait", "true", script=True)
    events = [line.split(" ")[2] for line in proc.stderr.splitlines()]
    assert events[:4] == ["submit", "validate", "depend", "priority"]
    assert events[-1] == "clean"
    assert "complete:" in events
