"""``--requires`` (RFC 35 queries, RFC 31 constraints) against live instances: a job
runs only on ranks that meet its constraints; one no rank meets is refused at
submission by the command and, for a jobspec submitted without it, denied by the
scheduler."""

from __future__ import annotations

import socket
from pathlib import Path

from pflux.api import Client
from pflux.api.jobspec import Jobspec
from support.instance import PFLUX, ok, pflux, start_with_config


def test_constraints_every_rank_meets_run(uri: str) -> None:
    host = socket.gethostname()
    out = ok(uri, "run", f"--requires=host:{host}", "--require=rank:0", "--requires=^gpu",
             "echo", "ran")  # fmt: skip
    assert out == "ran\n"
    jobid = ok(uri, "submit", "--requires", f"rank:0 | host:{host}", "true").strip()
    assert ok(uri, "job", "wait-event", jobid, "clean")


def test_unmet_constraints_are_refused_before_submission(uri: str, client: Client) -> None:
    before = len(client.list_jobs(attrs=["state"], max_entries=0))
    proc = pflux(uri, "submit", "--requires=rank:1", "true")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (
        'pflux-submit: ERROR: unsatisfiable constraints {"ranks":["1"]}:'
        " no rank of this instance meets them\n"
    )
    proc = pflux(uri, "run", "--requires=gpu", "true")
    assert proc.returncode == 1
    assert 'unsatisfiable constraints {"properties":["gpu"]}' in proc.stderr
    # bulksubmit sends each input's job as it is built: rank:0's goes, rank:3's is refused
    proc = pflux(uri, "bulksubmit", "--requires=rank:{}", "true", ":::", "0", "3")
    assert proc.returncode == 1
    assert len(proc.stdout.split()) == 1
    assert 'unsatisfiable constraints {"ranks":["3"]}' in proc.stderr
    sent = 1
    proc = pflux(uri, "submit", '--setattr=system.constraints={"color":["red"]}', "true")
    assert proc.stderr == (
        "pflux-submit: ERROR: constraints: unknown constraint operator 'color'"
        ' (in {"color":["red"]})\n'
    )
    assert len(client.list_jobs(attrs=["state"], max_entries=0)) == before + sent


def test_a_bad_query_names_the_option(uri: str) -> None:
    proc = pflux(uri, "submit", "--dry-run", "--requires=a", "--requires=(b", "true")
    assert proc.returncode == 1
    assert proc.stderr == (
        "pflux-submit: ERROR: --requires='a (b': Unclosed parenthesis in position 2\n"
    )


def test_the_scheduler_denies_a_jobspec_with_unmet_constraints(client: Client) -> None:
    spec = Jobspec.from_command(["true"]).setattr("system.constraints", {"ranks": ["7"]})
    result = client.wait(client.submit(spec))
    assert not result.success
    assert 'unsatisfiable constraints {"ranks":["7"]}' in result.errstr


def test_a_constraint_only_some_ranks_meet_places_the_job_there(tmp_path: Path) -> None:
    toml = '[[resource.config]]\nhosts = "node[0-3]"\ncores = "0"\nproperties = ["x"]\n'
    toml += '[[resource.config]]\nhosts = "node[2-3]"\nproperties = ["big"]\n'
    fmt = "{ranks} {nodelist}"
    script = (
        f"{PFLUX} run --requires=host:node1 true &&"
        f" {PFLUX} run -N2 --requires=big true &&"
        f" {PFLUX} run --requires='^big rank:1-3' true &&"
        f" {PFLUX} jobs -a -n -o '{fmt}'"
    )
    proc = start_with_config(tmp_path, toml, "sh", "-c", script)
    assert proc.returncode == 0, proc.stderr
    # newest first: the third job, the second, the first
    assert proc.stdout.splitlines() == ["1 node1", "[2-3] node[2-3]", "1 node1"]
