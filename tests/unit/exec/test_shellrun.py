"""Real runs: job shells from the launcher, their tasks, output, signals and results.

The finish status is the shell's wait status, and the shell exits as flux-core's
does: with the largest task exit code, 128 + signal for a task a signal killed.
"""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path
from typing import Any

import pytest

from pflux.spec.builder import set_shell_option
from pflux.spec.eventlog import parse
from pflux.spec.fluid import JobID

EXCEPTION_NOTE_HOST = os.uname().nodename


def output_events(live: Any, jobid: int) -> list[tuple[str, dict[str, Any]]]:
    return [(e.name, e.context or {}) for e in parse(live.guest(jobid, "output"))]


def stdout_text(live: Any, jobid: int, stream: str = "stdout") -> dict[str, str]:
    """Each task rank's text on ``stream``."""
    text: dict[str, str] = {}
    for name, context in output_events(live, jobid):
        if name == "data" and context["stream"] == stream and "data" in context:
            text[context["rank"]] = text.get(context["rank"], "") + context["data"]
    return text


def sh(live: Any, script: str, **kwargs: Any) -> dict[str, Any]:
    jobspec: dict[str, Any] = live.job(["sh", "-c", script], **kwargs)
    return jobspec


def test_true_starts_finishes_and_releases(live: Any) -> None:
    stream = live.start(live.job(["true"]))
    assert stream.all() == [
        ("start", {}),
        ("finish", {"status": 0}),
        ("release", {"ranks": "all", "final": True}),
    ]
    names = [e.name for e in parse(live.guest(stream.id, "exec.eventlog"))]
    assert names == ["init", "starting", "shell.init", "shell.start", "complete", "done"]
    exec_events = {e.name: e.context for e in parse(live.guest(stream.id, "exec.eventlog"))}
    assert exec_events["shell.init"] == {"leader-rank": 0, "size": 1}
    assert exec_events["shell.start"] == {"taskmap": {"version": 1, "map": [[0, 1, 1, 1]]}}
    assert exec_events["complete"] == {"status": 0}
    assert f"job-{stream.id}" not in live.namespaces()


def test_output_is_complete_when_finish_is_answered(live: Any) -> None:
    stream = live.start(live.job(["seq", "1", "20000"]))
    stream.until("finish")
    assert stdout_text(live, stream.id) == {"0": "".join(f"{i}\n" for i in range(1, 20001))}
    assert stream.kinds() == ["release"]


@pytest.mark.parametrize(
    ("command", "status"),
    [
        (["false"], 1 << 8),
        (["sh", "-c", "exit 3"], 3 << 8),
        (["sh", "-c", "kill -9 $$"], (128 + 9) << 8),
    ],
)
def test_the_finish_status_is_the_task_wait_status(
    live: Any, command: list[str], status: int
) -> None:
    stream = live.start(live.job(command))
    assert stream.kinds() == ["start", "finish", "release"]
    assert stream.status() == status


def test_the_largest_exit_code_wins_over_ranks(live: Any) -> None:
    script = "case $FLUX_TASK_RANK in 0) exit 2;; 1) kill -9 $$;; *) exit 0;; esac"
    stream = live.start(sh(live, script, num_tasks=3))
    stream.all()
    assert stream.status() == (128 + 9) << 8  # 128 + 9 > 2


def test_a_missing_command_raises_flux_cores_exception(live: Any) -> None:
    stream = live.start(live.job(["no-such-command-here"]))
    assert stream.all() == [
        ("start", {}),
        (
            "exception",
            {
                "severity": 0,
                "type": "exec",
                "note": f"task 0 (host {EXCEPTION_NOTE_HOST}): start failed:"
                " no-such-command-here: No such file or directory",
            },
        ),
        ("finish", {"status": 127 << 8}),
        ("release", {"ranks": "all", "final": True}),
    ]
    events = output_events(live, stream.id)
    # the shell's log says it first, at FATAL, as flux-core's shell does
    assert [name for name, _ in events] == ["header", "log", "data", "data"]
    assert events[1][1]["level"] == 0
    assert events[1][1]["message"].endswith("no-such-command-here: No such file or directory")
    assert all(context.get("eof") for name, context in events[2:])


def test_a_file_that_is_not_executable_is_permission_denied(live: Any, tmp_path: Path) -> None:
    script = tmp_path / "script"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(stat.S_IRUSR | stat.S_IWUSR)
    stream = live.start(live.job([str(script)], num_tasks=2))
    kinds = stream.all()
    note = kinds[1][1]["note"]
    assert note.endswith(f"start failed: {script}: Permission denied")
    assert stream.status() == 126 << 8


def test_a_missing_cwd_is_logged_and_the_tasks_run_in_tmp(live: Any) -> None:
    stream = live.start(live.job(["pwd"], cwd="/no/such/dir"))
    got = stream.all()
    assert [kind for kind, _ in got] == ["start", "finish", "release"]
    assert stream.status() == 0
    assert stdout_text(live, stream.id) == {"0": "/tmp\n"}
    logs = [context for name, context in output_events(live, stream.id) if name == "log"]
    assert logs == [
        {
            "rank": 0,
            "level": 3,
            "message": f"host {EXCEPTION_NOTE_HOST}: Could not change dir to /no/such/dir:"
            " No such file or directory. Going to /tmp instead",
        }
    ]


def test_cwd_is_the_jobspecs(live: Any, tmp_path: Path) -> None:
    stream = live.start(live.job(["pwd"], cwd=str(tmp_path)))
    stream.all()
    assert stdout_text(live, stream.id) == {"0": f"{tmp_path}\n"}


def test_stdout_and_stderr_of_every_rank_end_with_eof(live: Any) -> None:
    script = "echo out$FLUX_TASK_RANK; echo err$FLUX_TASK_RANK >&2"
    stream = live.start(sh(live, script, num_tasks=2))
    stream.all()
    assert stdout_text(live, stream.id) == {"0": "out0\n", "1": "out1\n"}
    assert stdout_text(live, stream.id, "stderr") == {"0": "err0\n", "1": "err1\n"}
    events = output_events(live, stream.id)
    assert events[0][1]["count"] == {"stdout": 2, "stderr": 2}
    eofs = sorted((c["stream"], c["rank"]) for n, c in events if c.get("eof"))
    assert eofs == [("stderr", "0"), ("stderr", "1"), ("stdout", "0"), ("stdout", "1")]
    for stream_name in ("stdout", "stderr"):
        for rank in ("0", "1"):
            of_rank = [c for n, c in events if c.get("stream") == stream_name and c["rank"] == rank]
            assert of_rank[-1].get("eof") is True


def test_partial_lines_and_binary_output_arrive_intact(live: Any) -> None:
    stream = live.start(sh(live, r"printf 'no newline'; printf '\377\n' >&2"))
    stream.all()
    assert stdout_text(live, stream.id) == {"0": "no newline"}
    [err] = [
        c for n, c in output_events(live, stream.id) if c.get("stream") == "stderr" and "data" in c
    ]
    assert err["encoding"] == "base64"


def test_output_beyond_the_limit_is_dropped_with_a_warning(live: Any) -> None:
    jobspec = sh(live, "seq 1 2000")
    jobspec["attributes"]["system"]["shell"] = {"options": {"output": {"limit": "1K"}}}
    stream = live.start(jobspec)
    stream.all()
    events = output_events(live, stream.id)
    kept = stdout_text(live, stream.id)["0"]
    assert 1000 < len(kept) <= 1024
    assert "".join(f"{i}\n" for i in range(1, 2001)).startswith(kept)
    logs = [c["message"] for n, c in events if n == "log"]
    assert logs == [
        "stdout will be truncated, 1K limit exceeded",
        f"stdout: {8893 - len(kept)} of 8893 bytes truncated",
    ]


def test_the_job_environment(live: Any) -> None:
    names = [
        "FLUX_JOB_ID",
        "FLUX_JOB_SIZE",
        "FLUX_JOB_NNODES",
        "FLUX_TASK_RANK",
        "FLUX_TASK_LOCAL_ID",
        "FLUX_JOB_TMPDIR",
        "PFLUX_URI",
        "PFLUX_KVS_NAMESPACE",
        "CUDA_VISIBLE_DEVICES",
        "MY_VAR",
    ]
    script = (
        " ".join(f'echo "{n}=${n}";' for n in names) + ' test -d "$FLUX_JOB_TMPDIR" && echo dir'
    )
    jobspec = live.job(["sh", "-c", script], num_tasks=2, environment={"MY_VAR": "x y"})
    stream = live.start(jobspec)
    stream.all()
    text = stdout_text(live, stream.id)
    for rank in ("0", "1"):
        lines = text[rank].splitlines()
        env = dict(line.split("=", 1) for line in lines[:-1])
        assert env["FLUX_JOB_ID"] == JobID(stream.id).f58
        assert (env["FLUX_JOB_SIZE"], env["FLUX_JOB_NNODES"]) == ("2", "1")
        assert env["FLUX_TASK_RANK"] == env["FLUX_TASK_LOCAL_ID"] == rank
        assert env["FLUX_JOB_TMPDIR"].endswith(f"/jobtmp-0-{JobID(stream.id).f58}")
        assert env["PFLUX_URI"] == live.uri
        assert env["PFLUX_KVS_NAMESPACE"] == f"job-{stream.id}"
        assert env["CUDA_VISIBLE_DEVICES"] == "-1"
        assert env["MY_VAR"] == "x y"
        assert lines[-1] == "dir"
    assert not Path(env["FLUX_JOB_TMPDIR"]).exists()


def test_gpus_are_made_visible(live: Any) -> None:
    jobspec = live.job(["sh", "-c", "echo $CUDA_VISIBLE_DEVICES"], num_tasks=2, gpus_per_task=1)
    stream = live.start(jobspec, live.make_R(cores="0-1", gpus="2-3"))
    stream.all()
    assert stdout_text(live, stream.id) == {"0": "2,3\n", "1": "2,3\n"}  # flux's default: on
    set_shell_option(jobspec, "gpu-affinity", "per-task")
    stream = live.start(jobspec, live.make_R(cores="0-1", gpus="2-3"))
    stream.all()
    assert stdout_text(live, stream.id) == {"0": "2\n", "1": "3\n"}


def test_per_task_affinity_binds_each_task_to_its_cores(live: Any) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    script = "grep Cpus_allowed_list /proc/self/status | cut -f2"
    jobspec = live.job(["sh", "-c", script], num_tasks=2)
    set_shell_option(jobspec, "cpu-affinity", "per-task")
    stream = live.start(jobspec, live.make_R(cores="2-3"))
    stream.all()
    expected = {str(rank): f"{cpus[(2 + rank) % len(cpus)]}\n" for rank in range(2)}
    assert stdout_text(live, stream.id) == expected


def test_per_slot_tasks_share_their_slots_cores(live: Any) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    jobspec = live.job(["sh", "-c", "grep Cpus_allowed_list /proc/self/status | cut -f2"])
    jobspec["resources"][0]["count"] = 2
    jobspec["resources"][0]["with"][0]["count"] = 2
    jobspec["tasks"][0]["count"] = {"per_slot": 2}
    set_shell_option(jobspec, "cpu-affinity", "per-task")
    stream = live.start(jobspec, live.make_R(cores="0-3"))
    stream.all()
    text = stdout_text(live, stream.id)
    first = ",".join(str(c) for c in sorted({cpus[0], cpus[1 % len(cpus)]}))
    assert sorted(text) == ["0", "1", "2", "3"]
    assert text["0"] == text["1"]
    assert text["2"] == text["3"]
    assert text["0"].strip() in (first, f"{min(cpus[:2])}-{max(cpus[:2])}")


def test_output_to_a_file_with_a_redirect_event(live: Any, tmp_path: Path) -> None:
    path = tmp_path / "out.{{id}}"
    stream = live.start(sh(live, "echo to-file; echo to-err >&2", output=str(path), num_tasks=2))
    stream.all()
    written = tmp_path / f"out.{JobID(stream.id).f58}"
    assert sorted(written.read_text().splitlines()) == ["to-err", "to-err", "to-file", "to-file"]
    redirects = [c for n, c in output_events(live, stream.id) if n == "redirect"]
    assert redirects == [
        {"stream": "stdout", "rank": "[0-1]", "path": str(written)},
        {"stream": "stderr", "rank": "[0-1]", "path": str(written)},
    ]
    assert not [c for n, c in output_events(live, stream.id) if n == "data"]


def test_labelled_file_output_and_stderr_in_the_kvs(live: Any, tmp_path: Path) -> None:
    out = tmp_path / "labelled"
    jobspec = sh(live, "echo a; echo b; echo c >&2", output=str(out), label_io=True)
    jobspec["attributes"]["system"]["shell"]["options"]["output"]["stderr"] = {"type": "kvs"}
    stream = live.start(jobspec)
    stream.all()
    assert out.read_text() == "0: a\n0: b\n"
    assert stdout_text(live, stream.id, "stderr") == {"0": "c\n"}


def test_an_output_file_that_cannot_be_opened_fails_the_job(live: Any) -> None:
    stream = live.start(live.job(["true"], output="/no/such/dir/out"))
    got = stream.all()
    assert (
        got[1][1]["note"] == "error opening output file /no/such/dir/out: No such file or directory"
    )
    assert stream.status() == 1 << 8


def test_processes_left_behind_are_killed_when_the_job_ends(live: Any) -> None:
    stream = live.start(sh(live, "sleep 100 </dev/null >/dev/null 2>&1 & echo $!"))
    stream.all()
    pid = int(stdout_text(live, stream.id)["0"])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_kill_signals_every_task(live: Any) -> None:
    stream = live.start(live.job(["sleep", "100"], num_tasks=2))
    assert stream.next() == ("start", {})
    live.call("job-exec.kill", {"id": stream.id, "signum": 10})
    assert stream.kinds() == ["finish", "release"]
    assert stream.status() == (128 + 10) << 8


def test_cancel_sends_sigterm(live: Any) -> None:
    stream = live.start(sh(live, "echo ready; exec sleep 100", unbuffered=True))
    stream.next()
    live.wait_output(stream.id, "ready")
    live.send("job-exec.exception", {"id": stream.id, "type": "cancel", "severity": 0, "note": ""})
    assert stream.kinds() == ["finish", "release"]
    assert stream.status() == (128 + 15) << 8  # as flux-core: 36608


def test_a_task_that_ignores_sigterm_gets_sigkill_after_the_grace(live: Any) -> None:
    live.exec.kill_timeout = 0.3
    try:
        script = "trap '' TERM; echo ready; sleep 100"
        stream = live.start(sh(live, script, unbuffered=True))
        stream.next()
        live.wait_output(stream.id, "ready")
        live.send("job-exec.exception", {"id": stream.id, "type": "cancel", "severity": 0})
        assert stream.kinds() == ["finish", "release"]
        assert stream.status() == (128 + 9) << 8
    finally:
        live.exec.kill_timeout = 5.0


def test_the_time_limit_raises_timelimit_and_sends_sigalrm(live: Any) -> None:
    import time

    now = time.time()
    stream = live.start(
        live.job(["sleep", "100"]), live.make_R(starttime=now, expiration=now + 0.3)
    )
    assert stream.all() == [
        ("start", {}),
        ("exception", {"severity": 0, "type": "timelimit", "note": "resource allocation expired"}),
        ("finish", {"status": (128 + 14) << 8}),
        ("release", {"ranks": "all", "final": True}),
    ]


def test_an_exception_before_the_shell_runs_releases_without_finish(live: Any) -> None:
    stream = live.start(live.job(["sleep", "100"]))
    live.send("job-exec.exception", {"id": stream.id, "type": "cancel", "severity": 0})
    got = stream.kinds()
    assert got in (["release"], ["start", "finish", "release"])
    assert f"job-{stream.id}" not in live.namespaces()


def test_a_job_that_cannot_be_planned_fails_before_it_starts(live: Any) -> None:
    R = {"version": 1, "execution": {"R_lite": []}}  # noqa: N806 (R names no target)
    stream = live.start(live.job(["true"]), R)
    [(kind, data), (release, _)] = stream.all()
    assert (kind, data["type"], release) == ("exception", "exec", "release")
    assert data["note"] == "invalid job: R: execution.R_lite names no execution target"
    assert f"job-{stream.id}" not in live.namespaces()


def test_the_exec_eventlog_times_the_tasks_start(live: Any) -> None:
    stream = live.start(live.job(["sleep", "0.05"]))
    stream.all()
    events = parse(live.guest(stream.id, "exec.eventlog"))
    times = {e.name: e.timestamp for e in events}
    assert times["starting"] <= times["shell.init"] == times["shell.start"] <= times["complete"]
    assert times["complete"] - times["shell.start"] >= 0.05


def test_the_shells_start_is_not_held_back_for_long(live: Any) -> None:
    stream = live.start(live.job(["sleep", "100"]))
    assert stream.next(timeout=5) == ("start", {})
    live.call("job-exec.kill", {"id": stream.id, "signum": 9})
    assert stream.kinds() == ["finish", "release"]


def test_output_is_relayed_while_the_job_runs(live: Any) -> None:
    stream = live.start(sh(live, "echo first; exec sleep 100", unbuffered=True))
    live.wait_output(stream.id, "first")
    live.call("job-exec.kill", {"id": stream.id, "signum": 15})
    assert stream.kinds() == ["start", "finish", "release"]


def test_much_output_arrives_whole_and_in_order(live: Any) -> None:
    stream = live.start(sh(live, "seq 1 200000; seq 1 50000 >&2"))
    stream.all()
    assert stdout_text(live, stream.id)["0"] == "".join(f"{i}\n" for i in range(1, 200001))
    assert stdout_text(live, stream.id, "stderr")["0"] == "".join(f"{i}\n" for i in range(1, 50001))


def test_shell_quoting_survives(live: Any) -> None:
    word = 'it\'s a "test" $HOME'
    stream = live.start(live.job(["sh", "-c", f"printf %s {shlex.quote(word)}"]))
    stream.all()
    assert stdout_text(live, stream.id) == {"0": word}
