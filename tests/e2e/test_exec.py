"""job-exec in a real instance: the RFC 32 stream over the socket, ``pflux run``, and restarts.

Each test runs ``pflux start``; the first plays the job-manager itself, sending
``job-exec.start`` through a client connection, the others go through the
whole instance.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from support.instance import read_fifo
from support.procs import children, pidfd_wait

PFLUX = Path(sys.executable).with_name("pflux")


def environment() -> dict[str, str]:
    env = {**os.environ, "PATH": f"{PFLUX.parent}:{os.environ['PATH']}"}
    env.pop("PFLUX_URI", None)
    return env


def start(*command: str, options: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PFLUX), "start", *options, *command],
        capture_output=True,
        text=True,
        env=environment(),
        timeout=120,
        check=False,
    )


DRIVER = """
import json, os, sys
from pflux.client.handle import Handle
from pflux.spec.builder import from_command
from pflux.spec.fluid import JobID

h = Handle()
R = {"version": 1, "execution": {"R_lite": [{"rank": "0", "children": {"core": "0"}}],
     "nodelist": ["localhost"], "starttime": 0, "expiration": 0}}
results = {}
for jobid, command in ((1 << 40, ["echo", "hello"]), (2 << 40, ["sh", "-c", "exit 3"])):
    jobspec = from_command(command, environment=dict(os.environ))
    rpc = h.rpc("job-exec.start", {"id": jobid, "userid": os.getuid(), "jobspec": jobspec,
                                   "reattach": False, "R": R}, streaming=True)
    responses = []
    while not responses or responses[-1]["type"] != "release":
        responses.append(rpc.get(30))
    # job-exec answers release before its last commit is applied; a commit of ours,
    # applied after it and answered once stored, is the fence before reading
    h.call("kvs.commit", {"ops": []})
    key = JobID(jobid).kvs + ".guest.output"
    results[command[0]] = {"responses": responses, "output": h.call("kvs.get", {"key": key})}
print(json.dumps(results))
"""


def test_the_start_stream_over_a_real_socket(tmp_path: Path) -> None:
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    result = start(sys.executable, str(script))
    assert result.returncode == 0, result.stderr
    got = json.loads(result.stdout)
    echo = got["echo"]["responses"]
    assert [r["type"] for r in echo] == ["start", "finish", "release"]
    assert all(r["id"] == 1 << 40 for r in echo)
    assert '"data":"hello\\n"' in got["echo"]["output"]["value"]
    assert got["sh"]["responses"][1] == {"id": 2 << 40, "type": "finish", "data": {"status": 768}}


def test_pflux_run_exit_codes_output_and_environment(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """\
        pflux run sh -c 'echo "out $FLUX_TASK_RANK of $FLUX_JOB_SIZE"; echo err >&2'
        pflux run -n2 sh -c 'exit 3'; echo "rc=$?"
        pflux run sh -c 'kill -9 $$'; echo "rc=$?"
        pflux run no-such-command 2>/dev/null; echo "rc=$?"
        """
    )
    result = start("sh", "-c", script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["out 0 of 1", "rc=3", "rc=137", "rc=127"]
    assert "err" in result.stderr


def test_a_killed_broker_leaves_its_jobs_running_and_a_restart_takes_them_over(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    script = "id=$(pflux submit sleep 100) && pflux job wait-event $id start >/dev/null"
    script += f" && echo $id > {fifo} && exec sleep 100"
    broker = subprocess.Popen(
        [str(PFLUX), "start", "--state-dir", str(state), "sh", "-c", script],
        env=environment(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    initial: list[int] = []
    try:
        jobid = read_fifo(fifo, 60)
        tree = children(broker.pid)
        launcher = next(p for p in tree if "pflux.shell.launcher" in _cmdline(p))
        initial = [p for p in tree if p != launcher]
        shells = children(launcher)  # the job's shell, and spares forked ahead of need
        [(shell, task)] = [(shell, task) for shell in shells for task in children(shell)]
        spares = [pid for pid in shells if pid != shell]
        broker.send_signal(signal.SIGKILL)
        broker.wait()
        assert pidfd_wait(spares, 10) == []  # they held the dead broker's socket
        assert pidfd_wait([launcher, shell, task], 0) == [launcher, shell, task]
    finally:
        if broker.poll() is None:
            broker.kill()
            broker.wait()
        for pid in initial:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    again = start(
        "sh",
        "-c",
        f"pflux cancel {jobid} && pflux job wait-event {jobid} clean >/dev/null"
        f" && pflux job eventlog {jobid}",
        options=("--state-dir", str(state)),
    )
    assert again.returncode == 0, again.stderr
    assert again.stdout.count(" start") == 1  # never started again
    assert f"finish status={(128 + signal.SIGTERM) << 8}" in again.stdout  # the same task
    assert pidfd_wait([launcher, shell, task], 10) == []


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode()
    except FileNotFoundError:
        return ""


def test_megabytes_of_output_are_kept_whole_and_attach_keeps_up(tmp_path: Path) -> None:
    size = 8_000_000  # 8 MB: under the 1G a job of the instance's owner may keep
    line = "0123456789" * 7 + "abcdefghi"
    script = textwrap.dedent(
        f"""\
        id=$(pflux submit sh -c 'yes {line} | head -c {size}')
        pflux job attach $id > {tmp_path}/attached
        pflux job eventlog -p output --format=json $id > {tmp_path}/eventlog
        """
    )
    result = start("sh", "-c", script)
    assert result.returncode == 0, result.stderr
    expected = (line + "\n") * (size // 80)
    assert (tmp_path / "attached").read_text() == expected
    events = [json.loads(text) for text in (tmp_path / "eventlog").read_text().splitlines()]
    data = "".join(e["context"].get("data", "") for e in events if e["name"] == "data")
    assert data == expected
    assert not [e for e in events if e["name"] == "log"]  # nothing truncated, no warning


def test_pflux_run_and_attach_forward_stdin(tmp_path: Path) -> None:
    (tmp_path / "in").write_text("from a file\n")
    script = textwrap.dedent(
        f"""\
        printf 'one\\ntwo\\n' | pflux run cat
        printf 'all\\n' | pflux run -n2 --label-io cat | sort
        printf 'first\\n' | pflux run -n2 --input=0 sh -c 'cat; echo "$FLUX_TASK_RANK done"' | sort
        pflux run --input={tmp_path}/in cat
        id=$(pflux submit cat)
        printf 'attached\\n' | pflux job attach $id
        pflux job eventlog -p input $id | cut -d' ' -f2- | sed 's/^/input: /'
        """
    )
    result = start("sh", "-c", script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "one",
        "two",
        "0: all",
        "1: all",
        "0 done",
        "1 done",
        "first",
        "from a file",
        "attached",
        'input: header version=1 encoding={"stdin":"UTF-8"} count={"stdin":1} options={}',
        'input: data stream="stdin" rank="all" data="attached\\n"',
        'input: data stream="stdin" rank="all" eof=true',
    ]


def test_bytes_that_are_not_utf8_come_out_as_they_went_in(tmp_path: Path) -> None:
    script = f"""pflux run sh -c "printf 'a\\377b\\n'" > {tmp_path}/run
    pflux submit --watch sh -c "printf 'c\\376\\n'" > {tmp_path}/watch"""
    result = start("sh", "-c", script)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "run").read_bytes() == b"a\xffb\n"
    assert (tmp_path / "watch").read_bytes().endswith(b"c\xfe\n")
