"""``pflux resource R`` (R of the resources by state) and ``resource reload`` (refused)
against a live instance."""

from __future__ import annotations

import json

from pflux.spec.resource import ResourceSet
from support.instance import LiveInstance, fails, ok


def test_resource_r_prints_the_resources_of_the_states_as_r(instance: LiveInstance) -> None:
    everything = ResourceSet.from_json(json.loads(ok(instance.uri, "resource", "R")))
    assert (everything.nnodes, everything.ncores(), everything.ranks().encode()) == (1, 4, "0")
    out = ok(instance.uri, "resource", "R", "-s", "allocated,down")
    assert json.loads(out)["execution"]["R_lite"] == []
    assert out.count("\n") == 1
    free = ok(instance.uri, "resource", "R", "--states=free,up", "-i", everything.nodelist[0])
    assert ResourceSet.from_json(json.loads(free)) == everything
    none = ok(instance.uri, "resource", "R", "-i", "7")
    assert json.loads(none)["execution"]["R_lite"] == []
    err = fails(instance.uri, "resource", "R", "-s", "bogus")
    assert "Invalid resource state bogus specified" in err


def test_resource_eventlog_records_the_start_and_each_drain(instance: LiveInstance) -> None:
    lines = ok(instance.uri, "resource", "eventlog", "-w", "resource-define").splitlines()
    names = [line.split()[1] for line in lines]
    assert names[:2] == ["restart", "resource-define"]
    assert lines[1].endswith('resource-define method="dynamic-discovery"') or lines[1].endswith(
        'resource-define method="configuration"'
    )
    ok(instance.uri, "resource", "drain", "0", "bad", "disk")
    ok(instance.uri, "resource", "undrain", "0")
    events = [
        json.loads(line)
        for line in ok(instance.uri, "resource", "eventlog", "-f", "json").splitlines()
    ]
    drain, undrain = events[-2:]
    host = ResourceSet.from_json(json.loads(ok(instance.uri, "resource", "R"))).nodelist[0]
    assert (drain["name"], drain["context"]) == (
        "drain",
        {"idset": "0", "nodelist": host, "reason": "bad disk", "overwrite": 0},
    )
    assert (undrain["name"], undrain["context"]) == ("undrain", {"idset": "0", "nodelist": host})
    followed = ok(instance.uri, "resource", "eventlog", "--follow", "--wait=undrain", "-H")
    assert followed.splitlines()[-1].endswith(f'undrain idset="0" nodelist="{host}"')
    assert followed.startswith("[")
    offsets = ok(instance.uri, "resource", "eventlog", "-T", "offset").splitlines()
    assert offsets[0].startswith("0.000000 restart ")


def test_resource_eventlog_matches_a_context_keeps_targets_and_times_out(
    instance: LiveInstance,
) -> None:
    host = ResourceSet.from_json(json.loads(ok(instance.uri, "resource", "R"))).nodelist[0]
    for reason in ("first", "second"):
        ok(instance.uri, "resource", "drain", "0", reason)
        ok(instance.uri, "resource", "undrain", "0")
    waited = ok(instance.uri, "resource", "eventlog", "-w", "drain", "-m", "reason=second")
    assert waited.splitlines()[-1].endswith('reason="second" overwrite=0')
    assert 'reason="first"' in waited
    everything = ok(instance.uri, "resource", "eventlog").splitlines()
    by_rank = ok(instance.uri, "resource", "eventlog", "-i", "0").splitlines()
    by_host = ok(instance.uri, "resource", "eventlog", "--include", host).splitlines()
    assert [line for line in everything if "resource-define" not in line] == by_rank == by_host
    assert ok(instance.uri, "resource", "eventlog", "-i", "7") == ""
    err = fails(instance.uri, "resource", "eventlog", "-w", "never", "-t", "0.2s")
    assert err.endswith("ERROR: Connection timed out\n")
    err = fails(instance.uri, "resource", "eventlog", "-w", "drain", "-m", "reason", rc=2)
    assert "invalid KEY=VAL argument: 'reason' (missing '=')" in err
    err = fails(instance.uri, "resource", "eventlog", "-t", "1s")
    assert err.endswith("ERROR: -t/--timeout: only with --follow or --wait\n")
    err = fails(instance.uri, "resource", "eventlog", "-m", "reason=second")
    assert err.endswith("ERROR: -m/--match-context: only with --wait\n")
