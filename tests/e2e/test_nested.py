"""``flux start CMD`` (and ``flux broker CMD``) in a job's task runs a nested pflux
instance over the job's resources, as flux-core's (Parsl and Maestro launch their
workers so): CMD reaches the nested instance, exits with CMD's status, and leaves
the enclosing instance's queue as it was."""

from __future__ import annotations

from support.instance import console, pflux


def run(uri: str, *args: str) -> tuple[int, str, str]:
    proc = pflux(uri, "run", *args, script=True)
    return proc.returncode, proc.stdout, proc.stderr


def test_a_jobs_flux_start_runs_its_command_in_a_nested_instance(uri: str) -> None:
    rc, out, err = run(
        uri, "-n1", "-c2", "flux", "start", "flux", "run", "-n2", "--label-io", "echo", "x"
    )
    assert rc == 0, err
    assert sorted(out.splitlines()) == ["0: x", "1: x"]


def test_the_nested_instance_has_the_jobs_cores_and_flux_attributes(uri: str) -> None:
    script = (
        "flux resource list -n -s free -o '{ncores} {ngpus}';"
        " for a in instance-level jobid parent-uri jobid-path; do flux getattr $a; done;"
        ' echo "$FLUX_ENCLOSING_ID ${FLUX_JOB_ID-unset} ${FLUX_KVS_NAMESPACE-unset}"'
    )
    rc, out, err = run(uri, "-n1", "-c3", "flux", "start", "sh", "-c", script)
    assert rc == 0, err
    counts, level, jobid, parent, path, env = out.splitlines()
    assert counts == "3 0"  # the job's 3 cores, not the enclosing instance's 4
    assert level == "1"
    assert parent == uri
    assert path == f"/{jobid}"
    assert env == f"{jobid} unset unset"  # as flux-core's: the job is the enclosing one


def test_what_the_nested_instance_does_stays_there(uri: str) -> None:
    script = "flux queue disable nested; flux queue stop; flux queue drain; exit 3"
    rc, _, err = run(uri, "-c1", "flux", "broker", "sh", "-c", script)
    assert rc == 3, err  # the nested instance exits with its command's status
    status = pflux(uri, "queue", "status").stdout
    assert status == "Job submission is enabled\nScheduling is started\n"


def test_a_job_whose_resources_cannot_be_read_is_said_so(uri: str) -> None:
    leaked = {"FLUX_JOB_ID": "ƒ2", "PFLUX_URI": uri, "PFLUX_KVS_NAMESPACE": "job-x"}
    proc = console("start", "true", **leaked)  # no such job in the enclosing instance
    assert proc.returncode == 1
    assert proc.stderr == (
        "pflux-start: ERROR: cannot read the resources of job ƒ2 (FLUX_JOB_ID) from its"
        f" instance ({uri}): job ƒ2 not found\n"
    )
