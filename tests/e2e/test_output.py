"""Task output end to end: ``--label-io``, ``--output``/``--error`` templates, live attach.

Jobs are real processes run by the suite's shared instance. The live attach
test proves the stream is live: the job cannot print its second line until
the test writes a FIFO, which it does only once ``pflux job attach`` has
shown the first.
"""

from __future__ import annotations

import os
import select
import subprocess
from pathlib import Path

from pflux.api import Client
from pflux.spec.fluid import JobID
from support.instance import PFLUX, environ, ok, pflux


def test_label_io_prefixes_task_ranks_on_run_and_attach(uri: str) -> None:
    run = pflux(uri, "run", "-n2", "--label-io", "sh", "-c", "echo hello; echo oops >&2")
    assert run.returncode == 0, run.stderr
    assert sorted(run.stdout.splitlines()) == ["0: hello", "1: hello"]
    assert sorted(run.stderr.splitlines()) == ["0: oops", "1: oops"]
    jobid = ok(uri, "submit", "-n3", "sh", "-c", 'printf "a\\nb\\n"').strip()
    attach = pflux(uri, "job", "attach", "-l", jobid)
    assert attach.returncode == 0, attach.stderr
    lines = attach.stdout.splitlines()
    for rank in range(3):  # each task's lines in order, each labelled
        assert [line for line in lines if line.startswith(f"{rank}: ")] == [
            f"{rank}: a",
            f"{rank}: b",
        ]
    plain = pflux(uri, "job", "attach", jobid)
    assert sorted(plain.stdout.splitlines()) == ["a"] * 3 + ["b"] * 3


def test_output_and_error_templates(uri: str, client: Client, tmp_path: Path) -> None:
    out = f"{tmp_path}/out.{{{{id}}}}.{{{{name}}}}.{{{{taskid}}}}"
    err = f"{tmp_path}/err.{{{{id.dec}}}}.{{{{size}}}}"
    run = pflux(
        uri,
        "run",
        "--job-name=myjob",
        f"--output={out}",
        f"--error={err}",
        "sh",
        "-c",
        "echo to-out; echo to-err >&2",
    )
    assert run.returncode == 0, run.stderr
    [path] = tmp_path.glob("out.*")
    jobid = JobID.parse(path.name.split(".")[1])
    # run tells where each stream went, as flux run does
    assert (run.stdout, run.stderr.splitlines()) == (
        "",
        [
            f"0: stdout redirected to {path}",
            f"0: stderr redirected to {tmp_path}/err.{int(jobid)}.1",
        ],
    )
    assert path.name == f"out.{jobid.f58}.myjob.0"
    assert path.read_text() == "to-out\n"
    assert (tmp_path / f"err.{int(jobid)}.1").read_text() == "to-err\n"
    # the output eventlog says where each stream went
    redirects = [
        e.context for e in client.events(jobid, path="guest.output") if e.name == "redirect"
    ]
    assert redirects == [
        {"stream": "stdout", "rank": "0", "path": str(path)},
        {"stream": "stderr", "rank": "0", "path": str(tmp_path / f"err.{int(jobid)}.1")},
    ]


def test_output_to_one_file_labelled_and_the_name_defaults_to_the_command(
    uri: str, tmp_path: Path
) -> None:
    template = f"{tmp_path}/{{{{name}}}}-{{{{ntasks}}}}.log"
    run = pflux(uri, "run", "-n2", "--label-io", f"--output={template}", "sh", "-c", "echo hi")
    assert run.returncode == 0, run.stderr
    assert sorted((tmp_path / "sh-2.log").read_text().splitlines()) == ["0: hi", "1: hi"]


def test_a_task_tag_gives_each_task_its_own_file(uri: str, tmp_path: Path) -> None:
    template = f"{tmp_path}/out.{{{{taskid}}}}"
    script = 'echo "task $FLUX_TASK_RANK"; echo "oops $FLUX_TASK_RANK" >&2'
    run = pflux(uri, "run", "-n3", f"--output={template}", "--label-io", "sh", "-c", script)
    assert run.returncode == 0, run.stderr
    for rank in range(3):  # stderr follows stdout into each task's file, labelled
        lines = (tmp_path / f"out.{rank}").read_text().splitlines()
        assert sorted(lines) == [f"{rank}: oops {rank}", f"{rank}: task {rank}"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.0", "out.1", "out.2"]


def test_a_node_tag_gives_the_node_one_file(uri: str, tmp_path: Path) -> None:
    template = f"{tmp_path}/node{{{{node.id}}}}.{{{{id.dec}}}}"
    command = ("submit", "-n2", "--flags=waitable", f"--output={template}", "sh", "-c", "echo hi")
    jobid = ok(uri, *command).strip()
    ok(uri, "job", "wait", jobid)
    path = tmp_path / f"node0.{int(JobID.parse(jobid))}"
    assert path.read_text() == "hi\nhi\n"


def read_line(stream: int, timeout: float = 30) -> str:
    """One line from a pipe, waiting for it with select (no sleeping)."""
    data = b""
    while not data.endswith(b"\n"):
        ready, _, _ = select.select([stream], [], [], timeout)
        assert ready, f"no line in {timeout} s (got {data!r})"
        chunk = os.read(stream, 1)
        assert chunk, f"end of output (got {data!r})"
        data += chunk
    return data.decode()


def test_attach_streams_a_running_jobs_output_live(uri: str, tmp_path: Path) -> None:
    fifo = tmp_path / "go"
    os.mkfifo(fifo)
    jobid = ok(uri, "submit", "sh", "-c", f"echo first; read x < {fifo}; echo second").strip()
    with subprocess.Popen(
        [str(PFLUX), "job", "attach", jobid],
        stdout=subprocess.PIPE,
        env=environ(PFLUX_URI=uri),
    ) as attach:
        try:
            assert attach.stdout is not None
            stdout = attach.stdout.fileno()
            assert read_line(stdout) == "first\n"  # the second line cannot exist yet
            fifo.write_text("go\n")
            assert read_line(stdout) == "second\n"
            assert attach.wait(timeout=30) == 0
        finally:
            if attach.poll() is None:
                attach.kill()
