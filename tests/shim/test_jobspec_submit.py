"""JobspecV1.from_submit and apply_options build the jobspec ``pflux submit`` builds for
the same options (compared with ``submit --dry-run`` run from the same environment and
directory), as flux-core's do; what they cannot take is refused. from_batch and
from_alloc build flux-core's nested instance jobspecs, which run here."""

from __future__ import annotations

import json
from pathlib import Path
from textwrap import dedent

import pytest

from support.instance import PFLUX, LiveInstance
from support.shim import run_flux

# (the submit command line's options, from_submit's keywords)
CASES = [
    ([], {}),
    (["-n4", "-c2"], {"ntasks": 4, "cores_per_task": 2}),
    (["-N2", "-n4", "--exclusive"], {"nodes": 2, "ntasks": 4, "exclusive": True}),
    (["-n2", "-g1"], {"ntasks": 2, "gpus_per_task": 1}),
    (["--job-name=x", "--queue=q", "--bank=b"], {"name": "x", "queue": "q", "bank": "b"}),
    (
        ["--output=o.{{id}}", "--error=e", "--label-io", "-u"],
        {"output": "o.{{id}}", "error": "e", "label_io": True, "unbuffered": True},
    ),
    (["--input=in.txt"], {"input": "in.txt"}),
    (["-t", "5m"], {"time_limit": "5m"}),
    (["-t", "90"], {"time_limit": 5400}),  # the command's bare number is minutes
    (["--env=-*", "--env=A=1", "--env=B=$A$A"], {"env": ["-*", "A=1", "B=$A$A"]}),
    (["--env=-*", "--env=HOME", "--env=R={{rank}}"], {"env": ["-*", "HOME", "R={{rank}}"]}),
    (["--env-remove=P*"], {"env": ["-P*"]}),
    (["--rlimit=-*", "--rlimit=nofile=128"], {"rlimit": ["-*", "nofile=128"]}),
    (["--rlimit=core=unlimited"], {"rlimit": ["core=unlimited"]}),
    (["--signal=USR2@30s"], {"signal": "USR2@30s"}),
    (["--signal=@2m"], {"signal": "@2m"}),
    (["--taskmap=cyclic"], {"taskmap": "cyclic"}),
    (["--taskmap=cyclic:2"], {"taskmap": "cyclic:2"}),
    (
        ["--dependency=afterok:f2", "--dependency=singleton"],
        {"dependency": ["afterok:f2", "singleton"]},
    ),
    (["-o", "verbose=2", "-o", "pty"], {"shell_options": {"verbose": 2, "pty": 1}}),
    (
        ["--setattr=user.x=1", "--setattr=foo=bar", "-S", ".user.y=2"],
        {"attributes": {"user.x": 1, "foo": "bar", ".user.y": 2}},
    ),
    (["--requires=rank:0"], {"requires": "rank:0"}),
    (["--requires=a,b", "--requires=-c host:x"], {"requires": ["a,b", "-c host:x"]}),
]


def test_from_submit_builds_what_submit_dry_run_does(tmp_path: object) -> None:
    code = f"""
        import json, os, subprocess
        from flux.job import JobspecV1
        cases = json.loads({json.dumps(json.dumps(CASES))})
        for argv, kwargs in cases:
            cli = subprocess.run(
                [{str(PFLUX)!r}, "submit", "--dry-run", *argv, "--", "app", "arg"],
                capture_output=True, text=True, check=True)
            built = JobspecV1.from_submit(["app", "arg"], cwd=os.getcwd(), **kwargs)
            same = json.loads(cli.stdout) == built.jobspec
            print(same, "" if same else json.dumps([argv, cli.stdout, built.jobspec]))
        """
    proc = run_flux(dedent(code), None)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == len(CASES)
    assert [line for line in lines if not line.startswith("True")] == []


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            'from_submit(["a"], requires=["a|"])',
            "ValueError --requires='a|': Unexpected end of input in 'a|'",
        ),
        (
            'from_submit(["a"], add_file=["/nonexistent/f"])',
            "ValueError --add-file=/nonexistent/f: [Errno 2] No such file or directory",
        ),
        (
            'from_submit(["a"], add_file=["two\\nlines"])',
            "ValueError --add-file: file name missing",
        ),
        (
            'from_submit(["a"], amd_gpumode="TPX")',
            "TypeError apply_options() got unexpected keyword argument(s): 'amd_gpumode'",
        ),
        (
            'from_submit(["a"], signal="NOPE@1s")',
            "ValueError --signal=NOPE@1s: NOPE is not a valid signal",
        ),
        (
            'from_submit(["a"], env=["B=$NOTSET_X"])',
            'ValueError --env=B=$NOTSET_X: variable "NOTSET_X" is not set',
        ),
        (
            'from_submit(["a"], rlimit=["bogus=1"])',
            "ValueError --rlimit=bogus=1: unknown resource limit",
        ),
    ],
)
def test_what_from_submit_refuses(call: str, message: str) -> None:
    code = f"""
        from flux.job import JobspecV1
        try:
            JobspecV1.{call}
        except (ValueError, TypeError) as exc:
            print(type(exc).__name__, exc)
        """
    proc = run_flux(dedent(code), None)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(message)


def test_apply_options_keeps_the_environment_unless_asked() -> None:
    code = """
        import os
        from flux.job import JobspecV1
        spec = JobspecV1.from_command(["a"], environment={"ONLY": "1"})
        spec.apply_options(time_limit="1h", attributes={".user.note": "x"})
        print(spec.environment, spec.duration, spec.jobspec["attributes"]["user"])
        spec.apply_options(env=["-*", "Z=2"])
        print(spec.environment, "rlimit" in spec.jobspec["attributes"]["system"].get("shell", {}))
        """
    proc = run_flux(dedent(code), None)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "{'ONLY': '1'} 3600.0 {'note': 'x'}",
        "{'Z': '2'} False",
    ]


def test_from_batch_and_from_alloc(instance: LiveInstance, tmp_path: Path) -> None:
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\necho in batch\n")
    code = f"""
        import os, flux, flux.job
        from flux.job import JobspecV1
        spec = JobspecV1.from_batch({str(script)!r}, nslots=2, time_limit="10m")
        system = spec.jobspec["attributes"]["system"]
        print(system["job"]["name"], system["duration"], system["cwd"] == os.getcwd())
        data = system["files"]["script"]["data"]
        print(spec.tasks[0]["command"], data == open({str(script)!r}).read())
        print(system["shell"]["options"]["output"]["stdout"]["path"])
        wrapped = JobspecV1.from_batch(content="echo wrapped", wrap=True,
                                       output={str(tmp_path / "out.txt")!r})
        print(wrapped.jobspec["attributes"]["system"]["job"]["name"],
              repr(wrapped.jobspec["attributes"]["system"]["files"]["script"]["data"]))
        h = flux.Flux()
        jobid = flux.job.submit(h, wrapped, waitable=True)
        print(flux.job.wait(h, jobid).success)
        alloc = JobspecV1.from_alloc(nodes=1)
        print(alloc.resources[0]["type"], alloc.resources[0].get("exclusive"),
              alloc.tasks[0]["command"])
        bg = JobspecV1.from_alloc(nslots=1, bg=True).jobspec
        print(bg["tasks"][0]["command"], bg == JobspecV1.from_alloc(nslots=1).jobspec)
        for call in (lambda: JobspecV1.from_batch(),
                     lambda: JobspecV1.from_batch("x", content="y"),
                     lambda: JobspecV1.from_alloc()):
            try:
                call()
            except (TypeError, ValueError) as exc:
                print(type(exc).__name__, exc)
        """
    proc = run_flux(dedent(code), instance.uri)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "job.sh 600.0 True",
        "['flux', 'broker', '{{tmpdir}}/script'] True",
        "flux-{{id}}.out",
        "batch '#!/bin/sh\\necho wrapped'",
        "True",
        "node True ['flux', 'broker']",
        "['flux', 'broker'] True",
        "TypeError from_batch() requires 'script' (file path) or 'content' (inline script)",
        "TypeError from_batch() accepts 'script' or 'content', not both",
        "ValueError from_alloc() requires nslots or nodes",
    ]
    assert (tmp_path / "out.txt").read_text() == "wrapped\n"


def test_add_file_carries_text_and_local_files(instance: LiveInstance, tmp_path: Path) -> None:
    local = tmp_path / "conf.txt"
    local.write_text("from a file\n")
    code = f"""
        import flux, flux.job
        from flux.job import JobspecV1
        spec = JobspecV1.from_submit(
            ["sh", "-c", "cat $FLUX_JOB_TMPDIR/notes $FLUX_JOB_TMPDIR/conf.txt"],
            add_file=["notes=inline\\ntext\\n", {str(local)!r}],
        )
        print(sorted(spec.jobspec["attributes"]["system"]["files"]))
        h = flux.Flux()
        jobid = flux.job.submit(h, spec)
        print(flux.job.job_output(h, jobid).stdout.splitlines())
        """
    proc = run_flux(dedent(code), instance.uri)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "['conf.txt', 'notes']",
        "['inline', 'text', 'from a file']",
    ]
