"""``pflux batch``: a script, with its ``#flux:`` directives, runs as the initial
program of a nested instance over the slots asked for, as ``flux batch``; its
output goes to ``flux-{{id}}.out``, the job exits with its status, and what it
submits stays in the nested instance."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pflux import fluxshim
from support.instance import LiveInstance, console, environ, fails, ok, pflux

SCRIPT = """\
#!/bin/sh
# FLUX: -n2 --job-name=from-directive
# FLUX: --setattr=user.note='a b'   # a comment
echo "args: $*"
echo "slots: $(flux resource list -n -s free -o '{ncores}')"
flux run -n2 --job-name=inner-batch-job hostname | wc -l
flux jobs -a -n -o '{name}'
echo "level: $(flux getattr instance-level)"
exit 3
"""


def submit(uri: str, where: Path, *args: str, stdin: str | None = None) -> str:
    out = ok(uri, "batch", f"--cwd={where}", *args, stdin=stdin)
    jobid = out.strip()
    assert out == f"{jobid}\n"  # the job id alone
    return jobid


def finish(uri: str, jobid: str) -> int:
    """The job's exit code, once it is over (its output is in a file: attach shows none)."""
    return pflux(uri, "job", "attach", jobid).returncode


def test_a_script_runs_in_a_nested_instance_with_its_directives(uri: str, tmp_path: Path) -> None:
    script = tmp_path / "job.sh"
    script.write_text(SCRIPT)
    jobid = submit(uri, tmp_path, "--", str(script), "one", "two")
    assert finish(uri, jobid) == 3  # the script's exit status
    out = (tmp_path / f"flux-{jobid}.out").read_text()
    assert out.splitlines() == [
        "args: one two",
        "slots: 2",  # -n2 from the directive: two slots of one core
        "2",
        "inner-batch-job",  # the nested instance lists its own job only
        "level: 1",
    ]
    listed = ok(uri, "jobs", "-a", "-n", "-o", "{name}")
    assert "from-directive" in listed.splitlines()
    assert "inner-batch-job" not in listed  # never reached the enclosing instance
    info = json.loads(ok(uri, "job", "info", jobid, "jobspec"))
    assert info["attributes"]["user"]["note"] == "a b"


def test_the_command_line_overrides_the_directives(uri: str, tmp_path: Path) -> None:
    script = tmp_path / "job.sh"
    script.write_text(SCRIPT)
    jobid = submit(uri, tmp_path, "-n1", "--job-name=cli", f"--output={tmp_path}/o", str(script))
    assert finish(uri, jobid) == 3
    assert "slots: 1" in (tmp_path / "o").read_text()
    assert ok(uri, "jobs", "-n", "-o", "{name}", jobid) == "cli\n"


def test_wrap_and_stdin(uri: str, tmp_path: Path) -> None:
    jobid = submit(uri, tmp_path, "-n1", "--wrap", "--", "echo", "wrapped", "$FLUX_URI")
    assert finish(uri, jobid) == 0
    text = (tmp_path / f"flux-{jobid}.out").read_text()
    assert text.startswith("wrapped local://")
    jobid = submit(uri, tmp_path, stdin="#!/bin/sh\n#flux: -n1\necho from stdin\nexit 1\n")
    assert finish(uri, jobid) == 1
    assert (tmp_path / f"flux-{jobid}.out").read_text() == "from stdin\n"
    assert ok(uri, "jobs", "-n", "-o", "{name}", jobid) == "batch\n"


def test_the_jobspec_carries_the_script(uri: str, tmp_path: Path) -> None:
    script = tmp_path / "s.sh"
    script.write_text("#!/bin/sh\ntrue\n")
    out = ok(uri, "batch", "-N1", "--broker-opts=-Slog-stderr-level=6", "--dry-run", str(script))
    jobspec = json.loads(out)
    system = jobspec["attributes"]["system"]
    assert jobspec["tasks"][0]["command"] == [
        "flux",
        "broker",
        "-Slog-stderr-level=6",
        "{{tmpdir}}/script",
    ]
    assert jobspec["tasks"][0]["count"] == {"total": 1}
    assert jobspec["resources"][0]["type"] == "node"
    assert jobspec["resources"][0]["exclusive"] is True  # -N without -n: whole nodes
    assert system["files"]["script"] == {
        "mode": 0o100700,
        "encoding": "utf-8",
        "data": "#!/bin/sh\ntrue\n",
    }
    assert system["shell"]["options"]["output"]["stdout"]["path"] == "flux-{{id}}.out"
    assert system["job"]["name"] == str(script)


def test_bad_batch_requests_are_refused(uri: str, tmp_path: Path) -> None:
    script = tmp_path / "s.sh"
    script.write_text("echo no shebang\n")
    err = fails(uri, "batch", "-n1", str(script), rc=2)
    assert err == f"pflux-batch: ERROR: {script} does not appear to start with '#!'\n"
    script.write_text("#!/bin/sh\ntrue\n")
    err = fails(uri, "batch", str(script), rc=2)
    assert err == "pflux-batch: ERROR: Number of slots to allocate must be specified\n"
    script.write_text("#!/bin/sh\n#flux: -n1\necho hi\n#flux: -n2\n")
    err = fails(uri, "batch", str(script), rc=2)
    assert err == (
        f"pflux-batch: ERROR: {script}: line 4: orphan 'flux:' detected:"
        " directives end at line 3, the script's first line that is not a comment\n"
    )
    script.write_text("#!/bin/sh\n#flux: --no-such-option\n")
    err = fails(uri, "batch", str(script), rc=2)
    assert err.endswith(f"pflux-batch: ERROR: argument parsing failed at {script} line 2\n")
    err = fails(uri, "batch", "-n1", "--broker-opts=-Sbroker.rc2_none=1", "--wrap", "true", rc=2)
    assert err == (
        "pflux-batch: ERROR: -S broker.rc2_none=1: pflux's broker cannot set attribute"
        " 'broker.rc2_none' (it sets: statedir, log-stderr-level, log-filename, log-level,"
        " tbon.fanout, tbon.heartbeat, tbon.timeout, broker.quorum-timeout, hostname, local-uri)\n"
    )
    err = fails(uri, "batch", "-n1", "--broker-opts=--k-ary=2", "--wrap", "true", rc=2)
    assert err == (
        "pflux-batch: ERROR: --broker-opts: --k-ary=2: pflux's broker does not take it"
        " (-v, -S ATTR=VAL (ATTR: statedir, log-stderr-level, log-filename, log-level,"
        " tbon.fanout, tbon.heartbeat, tbon.timeout, broker.quorum-timeout, hostname, local-uri),"
        " -c FILE)\n"
    )
    err = fails(uri, "batch", "-n1", "--conf=myconf", "--wrap", "true", rc=2)
    assert err == (
        "pflux-batch: ERROR: --conf=myconf: not KEY=VAL, a .toml or .json file, or TOML or"
        " JSON text (named configurations are not supported by pflux)\n"
    )


def test_broker_options_the_nested_instance_honours(uri: str, tmp_path: Path) -> None:
    conf = tmp_path / "conf.json"
    conf.write_text(json.dumps({"resource": {"cores": 1}}))
    state = tmp_path / "state"
    jobid = submit(
        uri,
        tmp_path,
        "-n2",
        f"--broker-opts=-Sstatedir={state},-c{conf}",
        "--wrap",
        "flux getattr statedir; flux resource list -n -s free -o '{ncores}'",
    )
    assert finish(uri, jobid) == 0
    out = (tmp_path / f"flux-{jobid}.out").read_text()
    assert out.splitlines() == [str(state), "1"]  # the state directory, the config's 1 core
    assert any(state.iterdir())  # kept there


def test_a_batch_jobspec_a_tool_builds_runs(uri: str, tmp_path: Path) -> None:
    """flux's ``JobspecV1.from_batch_command`` (a broker per node, ``mpi=none``) runs
    its script from the jobspec's files, as a tool submitting it expects."""
    program = tmp_path / "tool.py"
    program.write_text(
        "import flux, flux.job\n"
        f"h = flux.Flux('{uri}')\n"
        "js = flux.job.JobspecV1.from_batch_command(\n"
        "    '#!/bin/sh\\necho level $(flux getattr instance-level)\\nexit 2\\n',\n"
        "    'b', num_slots=2)\n"
        f"js.stdout = '{tmp_path}/out'\n"
        "print(flux.job.wait(h, flux.job.submit(h, js, waitable=True)).success)\n"
    )
    proc = pflux(uri, "python", str(program), script=True)
    assert proc.stdout == "False\n", proc.stderr  # the script's exit 2
    assert (tmp_path / "out").read_text() == "level 1\n"


def test_conf_configures_the_nested_instance(uri: str, tmp_path: Path) -> None:
    toml = tmp_path / "c.toml"
    toml.write_text("[resource]\ncores = 3\n")
    show = "flux resource list -n -s free -o '{ncores}'"
    runs = [
        (["--conf=resource.cores=1"], "1"),
        ([f"--conf={toml}"], "3"),
        ([f"--conf={toml}", "--conf=[resource]\ncores = 2\n"], "2"),  # the last one wins
    ]
    for confs, cores in runs:
        jobid = submit(uri, tmp_path, "-n4", *confs, "--wrap", show)
        assert finish(uri, jobid) == 0
        assert (tmp_path / f"flux-{jobid}.out").read_text() == f"{cores}\n"
    jobid = submit(uri, tmp_path, "-n1", "--conf=resource.colour=1", "--wrap", "true")
    assert finish(uri, jobid) == 1  # the nested instance refuses what it cannot use
    text = (tmp_path / f"flux-{jobid}.out").read_text()
    assert "conf.json" in text
    assert "colour" in text


def test_whole_nodes_and_one_broker_on_the_first(tmp_path: Path) -> None:
    config = tmp_path / "two.toml"
    config.write_text('[[resource.config]]\nhosts = "node[0-1]"\ncores = "0-1"\n')
    with LiveInstance(tmp_path / "state", "--config", str(config), cores=None) as live:
        show = "flux resource list -n -s free -o '{ncores}'; flux getattr size"
        jobid = submit(live.uri, tmp_path, "-N2", "--wrap", show)
        assert finish(live.uri, jobid) == 0
        listed = ok(live.uri, "jobs", "-n", "-o", "{nnodes} {ntasks} {nodelist}", jobid)
    assert listed == "2 1 node[0-1]\n"  # both nodes, one broker
    assert (tmp_path / f"flux-{jobid}.out").read_text() == "2\n1\n"  # the first node's cores


def test_flux_batch_names_itself_flux(uri: str, tmp_path: Path) -> None:
    script = tmp_path / "s.sh"
    script.write_text("#!/bin/sh\n#flux: -n1\ntrue\n#flux: -n2\n")
    proc = subprocess.run(
        [os.path.join(fluxshim.BIN, "flux"), "batch", str(script)],
        capture_output=True,
        text=True,
        env=environ(PFLUX_URI=uri, PFLUX_PYTHON=sys.executable),
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"flux-batch: ERROR: {script}: line 4: orphan 'flux:'")


def test_start_takes_the_broker_attributes_it_honours(tmp_path: Path) -> None:
    proc = console("start", "-S", "rundir=/x", "true")
    assert (proc.returncode, proc.stderr) == (
        2,
        "pflux-start: ERROR: -S rundir=/x: pflux's broker cannot set attribute 'rundir'"
        " (it sets: statedir, log-stderr-level, log-filename, log-level, tbon.fanout,"
        " tbon.heartbeat, tbon.timeout, broker.quorum-timeout, hostname, local-uri)\n",
    )
    proc = console("start", f"-Sstatedir={tmp_path}/a", f"--state-dir={tmp_path}/b", "true")
    assert proc.returncode == 2
    assert proc.stderr.endswith(f"--state-dir={tmp_path}/b says otherwise\n")
    proc = console("start", f"-Sstatedir={tmp_path}/s", "-Slog-stderr-level=6", "true")
    assert proc.returncode == 0, proc.stderr
    assert "pflux.broker INFO: shutdown started" in proc.stderr  # level 6 logs as -v
    assert (tmp_path / "s").is_dir()
    quiet = console("start", "-Slog-stderr-level=3", "true")
    assert (quiet.returncode, quiet.stderr) == (0, "")
