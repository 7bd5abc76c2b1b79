"""``pflux jobs -R`` against a live instance: a batch job's nested instance's jobs are
listed below it (``-L`` stops the descent, ``--json`` nests them, ``--stats`` counts
them), as ``flux jobs --recursive`` lists them; the ``instance.*`` fields show what
that instance says of itself."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pflux.api import Client
from pflux.spec.fluid import JobID
from support.instance import ok, read_fifo


def test_a_nested_instances_jobs_are_listed_below_its_job(
    uri: str, client: Client, tmp_path: Path
) -> None:
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    script = tmp_path / "nest.sh"
    script.write_text(
        "#!/bin/sh\n"
        "flux submit --urgency=hold --job-name=inner true >/dev/null\n"
        f"echo ready > {fifo}\n"
        "exec sleep 300\n"
    )
    out = f"--output={tmp_path}/flux-{{{{id}}}}.out"
    outer = ok(uri, "batch", "-n1", "--job-name=outer", out, str(script)).strip()
    jobid = JobID.parse(outer)
    assert read_fifo(fifo).strip() == "ready"
    client.wait_event(jobid, "memo")  # the instance's uri is posted
    lines = ok(uri, "jobs", "-R", "-n", "-o", "{id.f58} {name}").splitlines()
    assert lines[0] == f"{outer} outer"
    assert lines[1:3] == ["", f"{outer}:"]
    assert lines[3].endswith(" inner")
    assert len(lines) == 4
    assert ok(uri, "jobs", "-R", "-L", "0", "-n", "-o", "{name}") == "outer\n"
    stats = ok(uri, "jobs", "-R", "--stats", "-n", "-o", "{name}").splitlines()
    assert stats[3:5] == [f"{outer}:", "0 running, 0 completed, 0 failed, 1 pending"]
    tree = json.loads(ok(uri, "jobs", "-R", "--json"))
    assert [job["name"] for job in tree["jobs"][0]["jobs"]] == ["inner"]
    fields = (
        "{id.f58} {instance.stats} {instance.stats.total} {instance.utilization!P}"
        " {instance.progress} {instance.resources.all.ncores} {instance.resources.free.ncores}"
    )
    assert ok(uri, "jobs", "-a", "-o", fields) == (
        f"JOBID STATS NJOBS CORE% PROG CORES FREE\n{outer} PD:1 R:0 CD:0 F:0 1 0% 0.0 1 1\n"
    )
    client.cancel(jobid)
    client.wait(jobid)
    assert ok(uri, "jobs", "-a", "-n", "-o", fields).split() == [outer]  # no instance now
