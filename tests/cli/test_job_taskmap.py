"""``pflux job taskmap`` and ``job namespace`` against a live instance: a job's task
map from its ``shell.start`` event and the questions it answers (hosts from its R),
a map given as text, a job's guest namespace, and flux-core's errors."""

from __future__ import annotations

import socket

from pflux.api import Client
from pflux.spec.fluid import JobID
from support.instance import fails, jobspec, ok


def test_a_jobs_taskmap_and_its_questions(uri: str) -> None:
    out = ok(uri, "submit", "-n4", "--wait", "true")
    jobid = out.strip()
    assert ok(uri, "job", "taskmap", jobid) == '{"version":1,"map":[[0,1,4,1]]}\n'
    assert ok(uri, "job", "taskmap", "--taskids=0", jobid) == "0-3\n"
    assert ok(uri, "job", "taskmap", "--ntasks=0", jobid) == "4\n"
    assert ok(uri, "job", "taskmap", "--nodeid=3", jobid) == "0\n"
    host = socket.gethostname()
    assert ok(uri, "job", "taskmap", "--hostname=2", jobid) == f"{host}\n"
    assert ok(uri, "job", "taskmap", "--to=hosts", jobid) == f"{host}: 0-3\n"
    assert ok(uri, "job", "taskmap", "--to=multiline", jobid) == "0: 0\n1: 0\n2: 0\n3: 0\n"
    assert ok(uri, "job", "taskmap", "--to=pmi", jobid) == "(vector,(0,1,4))\n"
    assert fails(uri, "job", "taskmap", "--nodeid=4", jobid) == (
        "pflux-job: ERROR: failed to get nodeid for task 4\n"
    )


def test_a_taskmap_given_as_text(uri: str) -> None:
    assert ok(uri, "job", "taskmap", "--to=raw", "(vector,(0,2,2))") == "0-1;2-3\n"
    assert ok(uri, "job", "taskmap", "0,2;1,3") == '{"version":1,"map":[[0,2,1,2]]}\n'
    assert ok(uri, "job", "taskmap", "--taskids=1", "[[0,2,1,2]]") == "1,3\n"
    assert fails(uri, "job", "taskmap", "0;2") == (
        "pflux-job: ERROR: error decoding taskmap: missing taskid: 1\n"
    )
    assert fails(uri, "job", "taskmap", "--hostname=0", "0-1") == (
        "pflux-job: ERROR: taskmap: can't use --hostname without a jobid\n"
    )
    assert fails(uri, "job", "taskmap", "--to=hosts", "0-1") == (
        "pflux-job: ERROR: taskmap: can't use --to=hosts without a jobid\n"
    )
    assert fails(uri, "job", "taskmap", "--to=yaml", "0-1") == (
        "pflux-job: ERROR: invalid value --to=yaml\n"
    )
    usage = fails(uri, "job", "taskmap", "--ntasks=0", "--nodeid=0", "0-1", rc=2)
    assert "not allowed with argument" in usage


def test_a_job_without_a_taskmap_or_unknown(uri: str, client: Client) -> None:
    test_mode = client.submit(jobspec())  # no shell: no shell.start
    client.wait(test_mode)
    assert fails(uri, "job", "taskmap", test_mode.f58) == (
        "pflux-job: ERROR: No taskmap found for job\n"
    )
    unknown = JobID(int(test_mode) + 1000000)
    assert fails(uri, "job", "taskmap", unknown.f58) == (
        "pflux-job: ERROR: Unable to get job taskmap: no such job\n"
    )


def test_job_namespace_names_each_jobs_guest_namespace(uri: str) -> None:
    jobid = JobID(123456789)
    assert ok(uri, "job", "namespace", jobid.f58, "42") == "job-123456789\njob-42\n"
    assert ok(uri, "job", "namespace", stdin=f"{jobid.f58}\n{jobid.hex}\n", script=True) == (
        "job-123456789\njob-123456789\n"
    )
    assert fails(uri, "job", "namespace", "42", "nope") == (
        'pflux-job: ERROR: error parsing jobid: "nope"\n'
    )
