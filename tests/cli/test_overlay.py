"""``flux overlay status|lookup|parentof`` on an instance of four ranks, one of them
killed: the tree as flux-overlay(1) draws it, and each subtree's state."""

from __future__ import annotations

import os
import re
import signal
import socket
from collections.abc import Iterator

import pytest

from pflux.client.handle import Handle
from support.instance import LiveInstance, fails, ok, wait_for_log
from support.raw import send_raw
from support.shim import flux_output


@pytest.fixture(scope="module")
def four(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveInstance]:
    where = tmp_path_factory.mktemp("overlay")
    args = ("--test-size=4", "-S", "tbon.fanout=2", "-S", "tbon.heartbeat=0.1s")
    with LiveInstance(where / "s", *args, "-S", "tbon.timeout=1s", cores=4) as inst:
        yield inst


def test_overlay_status_draws_the_tree_and_tells_a_lost_rank(four: LiveInstance) -> None:
    host = socket.gethostname()
    uri = four.uri
    assert ok(uri, "overlay", "status").splitlines() == [
        f"0 {host}: full",
        f"├─ 1 {host}: full",
        f"│  └─ 3 {host}: full",
        f"└─ 2 {host}: full",
    ]
    assert ok(uri, "overlay", "parentof", "3") == "1\n"
    assert ok(uri, "overlay", "lookup", "2") == f"{host}\n"
    assert ok(uri, "overlay", "lookup", host) == "0-3\n"
    assert "rank 0 has no parent" in fails(uri, "overlay", "parentof", "0", rc=2)
    with Handle(uri) as handle:  # rank 3's pid, from its attributes through rank 0
        rpc = send_raw(handle, "broker.attrs", None, nodeid=3)
        assert rpc is not None
        pid = int(rpc.get(30)["attrs"]["broker.pid"])
    os.kill(pid, signal.SIGKILL)
    wait_for_log(uri, "rank 3 is down")  # the scheduler, told by the overlay at rank 0
    assert ok(uri, "overlay", "status").splitlines() == [
        f"0 {host}: degraded",
        f"├─ 1 {host}: degraded",
        f"│  └─ 3 {host}: lost",
        f"└─ 2 {host}: full",
    ]
    assert ok(uri, "overlay", "status", "--down", "--no-pretty").splitlines() == [
        f"0 {host}: degraded",
        f"1 {host}: degraded",
        f"3 {host}: lost",
    ]
    assert ok(uri, "overlay", "status", "--summary") == f"0 {host}: degraded\n"
    assert ok(uri, "overlay", "status", "--rank", "2") == f"2 {host}: full\n"
    verbose = ok(uri, "overlay", "status", "-v", "--summary")
    assert re.fullmatch(rf"0 {host}: degraded for [\d.]+m?s\n", verbose), verbose


def test_events_cross_the_overlay_numbered_by_rank_zero(four: LiveInstance) -> None:
    import pflux

    with Handle(four.uri) as handle:  # ranks 1 and 2's sockets, from their attributes
        uris = {}
        for rank in (1, 2):
            rpc = send_raw(handle, "broker.attrs", None, nodeid=rank)
            assert rpc is not None
            uris[rank] = rpc.get(30)["attrs"]["local-uri"]
    with (
        pflux.Client(four.uri, timeout=60) as zero,
        pflux.Client(uris[1], timeout=60) as one,
        pflux.Client(uris[2], timeout=60) as two,
    ):
        heard = {rank: client.subscribe(["ovl."]) for rank, client in ((0, zero), (1, one))}
        seq = zero.publish_event("ovl.down", {"from": 0})
        for events in heard.values():
            assert next(events) == {"topic": "ovl.down", "seq": seq, "payload": {"from": 0}}
        up = two.publish_event("ovl.up", {"from": 2})  # numbered by rank 0, after the first
        assert up == seq + 1
        for events in heard.values():
            assert next(events) == {"topic": "ovl.up", "seq": up, "payload": {"from": 2}}
        ok(uris[1], "event", "pub", "ovl.cli", '{"n": 1}')  # flux event pub at rank 1
        for events in heard.values():
            assert next(events) == {"topic": "ovl.cli", "seq": up + 1, "payload": {"n": 1}}
        script = """
            import flux
            h = flux.Flux()
            h.event_subscribe("ovl.shim")
            h.event_send("ovl.shim", {"from": "shim"})
            msg = h.event_recv()
            print(msg.topic, msg.payload, msg.matchtag)
        """
        shim = flux_output(script, uris[2])  # the flux package, at rank 2
        assert shim == f"ovl.shim {{'from': 'shim'}} {up + 2}\n"
        for events in heard.values():
            assert next(events)["seq"] == up + 2
