"""The jobspecs ``batch`` and ``alloc`` build (``--dry-run``): slots, nodes, the
broker's options, the job options they share with submit, and alloc's refusals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from support.instance import fails, ok


def dry(uri: str, command: str, *args: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(ok(uri, command, "--dry-run", *args))
    return data


def slot(jobspec: dict[str, Any]) -> dict[str, Any]:
    top = jobspec["resources"][0]
    found: dict[str, Any] = top["with"][0] if top["type"] == "node" else top
    return found


def test_slots_cores_and_gpus_per_slot(uri: str) -> None:
    for command, tail in (("batch", ["--wrap", "true"]), ("alloc", ["true"])):
        jobspec = dry(uri, command, "-n3", "--cores-per-slot=2", "--gpus-per-slot=1", *tail)
        assert slot(jobspec)["count"] == 3
        assert {r["type"]: r["count"] for r in slot(jobspec)["with"]} == {"core": 2, "gpu": 1}
        assert jobspec["tasks"][0]["count"] == {"total": 1}  # one broker
        jobspec = dry(uri, command, "--nslots=2", "--nodes=1", "--exclusive", *tail)
        assert jobspec["resources"][0] == {**jobspec["resources"][0], "count": 1, "exclusive": True}
        assert slot(jobspec)["count"] == 2


def test_job_options_apply_as_submits(uri: str, tmp_path: Path) -> None:
    jobspec = dry(
        uri,
        "batch",
        "-n1",
        "-t5",
        "--job-name=nm",
        "--queue=batch",
        f"--cwd={tmp_path}",
        "--setattr=user.x=1",
        "--output=o.txt",
        "--error=e.txt",
        "--env=-*",
        "--env=KEEP=1",
        "--urgency=20",
        "--wrap",
        "true",
    )
    system = jobspec["attributes"]["system"]
    assert (system["duration"], system["job"]["name"], system["cwd"]) == (300, "nm", str(tmp_path))
    assert system["queue"] == "batch"
    assert system["environment"] == {"KEEP": "1"}
    assert jobspec["attributes"]["user"] == {"x": 1}
    output = system["shell"]["options"]["output"]
    assert (output["stdout"]["path"], output["stderr"]["path"]) == ("o.txt", "e.txt")
    text = ok(uri, "alloc", "-n1", "--dry-run", "--format=yaml", "--broker-opts=-v,-v", "true")
    assert yaml.safe_load(text)["tasks"][0]["command"] == ["flux", "broker", "-v", "-v", "true"]


def test_alloc_refuses_io_options_and_bad_broker_options(uri: str) -> None:
    for option in ("--input=f", "--error=f"):
        err = fails(uri, "alloc", "-n1", option, "true", rc=2)
        assert err.endswith("not an alloc option (its I/O is this terminal's)\n")
    err = fails(uri, "alloc", "-n1", "--broker-opts=-Slog-stderr-level=9", "true", rc=2)
    assert err == "pflux-alloc: ERROR: -S log-stderr-level=9: log-stderr-level must be 0-7\n"
    err = fails(uri, "alloc", "-n1", "--conf=a.toml", "true", rc=2)
    assert err == "pflux-alloc: ERROR: --conf=a.toml: No such file or directory\n"
    err = fails(uri, "alloc", "-n1", "--conf=a=1", "--broker-opts=-cx.toml", "true", rc=2)
    assert err == (
        "pflux-alloc: ERROR: --conf: the broker options give a configuration file already (-c)\n"
    )


def test_conf_travels_in_the_jobspec(uri: str) -> None:
    jobspec = dry(uri, "alloc", "-n1", "--conf=a.b=1", "--conf=a.c=x", "--conf=d=[1]", "true")
    assert jobspec["tasks"][0]["command"] == ["flux", "broker", "-c{{tmpdir}}/conf.json", "true"]
    conf = jobspec["attributes"]["system"]["files"]["conf.json"]
    assert conf == {"mode": 0o100600, "data": {"a": {"b": 1, "c": "x"}, "d": [1]}}


def test_batch_output_kvs_keeps_the_output_in_the_job(uri: str) -> None:
    jobspec = dry(uri, "batch", "-n1", "--output=kvs", "--wrap", "true")
    assert "output" not in jobspec["attributes"]["system"].get("shell", {}).get("options", {})
