"""``pflux resource list`` without an instance: states, formats and flux's sentinels."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pflux.cli import resource
from pflux.errors import PfluxError
from pflux.spec.idset import IdSet
from pflux.spec.resource import ResourceSet, Target


def two_nodes() -> dict[str, Any]:
    """What sched.resource-status says for two 4-core nodes, node1 with 2 GPUs, 3 cores used."""
    all_ = ResourceSet(
        {
            0: Target("node0", IdSet.range(0, 3), IdSet()),
            1: Target("node1", IdSet.range(0, 3), IdSet.range(0, 1)),
        }
    )
    allocated = ResourceSet(
        {
            0: Target("node0", IdSet.range(0, 1), IdSet()),
            1: Target("node1", IdSet([0]), IdSet([1])),
        }
    )
    return {
        "all": all_.to_json(),
        "allocated": allocated.to_json(),
        "down": ResourceSet({}).to_json(),
    }


def answering(
    monkeypatch: pytest.MonkeyPatch, reply: dict[str, Any], config: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The client's handle answers ``sched.resource-status`` with ``reply`` and
    ``config.get`` with ``config`` (default: nothing configured)."""

    class FakeHandle:
        def __init__(self, uri: str | None, timeout: float | None = None) -> None:
            self.uri = uri
            self.hello = None  # no ping was made

        def close(self) -> None:
            pass

        def call(self, topic: str, payload: Any, *args: Any, **kwargs: Any) -> Any:
            if topic == "config.get":
                return config or {}
            assert topic == "sched.resource-status"
            return reply

    monkeypatch.setattr("pflux.api.client.Handle", FakeHandle)
    return reply


@pytest.fixture
def status(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    return answering(monkeypatch, two_nodes())


def out(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert resource.main(["list", *argv]) == 0
    return capsys.readouterr().out


def test_default_format_matches_flux(status: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert out(capsys) == (
        "     STATE NNODES NCORES NGPUS NODELIST\n"
        "      free      2      5     1 node[0-1]\n"
        " allocated      2      3     1 node[0-1]\n"
        "      down      0      0     0 \n"
    )


def test_states_in_the_order_given(status: Any, capsys: pytest.CaptureFixture[str]) -> None:
    text = out(capsys, "-s", "all,up,free,all", "-n", "-o", "{state} {ncores} {ranks}")
    assert text == "all 8 0-1\nup 8 0-1\nfree 5 0-1\n"


def test_rlist_format(status: Any, capsys: pytest.CaptureFixture[str]) -> None:
    text = out(capsys, "-o", "rlist", "-s", "allocated", "-n")
    assert text == " allocated      2      3     1 rank0/core[0-1] rank1/core0,gpu1\n"


def test_include_by_rank_or_host_and_skip_empty(
    status: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert out(capsys, "-i", "1", "-no", "{state} {nodelist} {ncores}") == (
        "free node1 3\nallocated node1 1\ndown  0\n"
    )
    assert out(capsys, "-i", "node0", "--skip-empty", "-no", "{state} {ncores}") == (
        "free 2\nallocated 2\n"
    )


def test_sentinels_drop_and_widen(status: Any, capsys: pytest.CaptureFixture[str]) -> None:
    text = out(capsys, "-s", "free", "-o", "{state}?:{queue:>9} +:{nodelist:>3}|")
    assert text == "STATE  NODELIST|\nfree node[0-1]|\n"


def test_spec_extensions(status: Any, capsys: pytest.CaptureFixture[str]) -> None:
    text = out(capsys, "-s", "free,down", "-no", "{nodelist:<5.5+}|{nodelist:h}|")
    assert text == "node+|node[0-1]|\n     |-|\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-s", "free,lost"], "Invalid resource state lost specified"),
        (["-o", "{state} {bogus}"], "Unknown format field: bogus"),
        (["-o", "{state"], "invalid format"),
        (["-i", "node[", "-s", "free"], "--include:"),
    ],
)
def test_errors_exit_1(
    status: Any, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert resource.main(["list", *argv]) == 1
    err = capsys.readouterr().err
    assert err.startswith("pflux-resource: ERROR: ")
    assert message in err


def test_format_help_lists_named_formats(capsys: pytest.CaptureFixture[str]) -> None:
    text = out(capsys, "-o", "help")
    assert "default" in text
    assert "rlist" in text


def test_output_format_rejects_unknown_fields() -> None:
    with pytest.raises(PfluxError, match="Unknown format field: x"):
        resource.ResourceFormat("{x}")


def four_nodes_two_offline() -> dict[str, Any]:
    """sched.resource-status of node[0-3] (2 cores each): rank 2 drained, ranks 2-3 offline
    (their brokers lost), one core of rank 0 allocated."""

    def ranks(*numbers: int, cores: str = "0-1") -> dict[str, Any]:
        targets = {n: Target(f"node{n}", IdSet.decode(cores), IdSet()) for n in numbers}
        return ResourceSet(targets).to_json()

    return {
        "all": ranks(0, 1, 2, 3),
        "allocated": ranks(0, cores="0"),
        "down": ranks(2, 3),
        "online": "0-1",
        "offline": "2-3",
        "drained": "2",
        "draining": "",
        "drain": {"2": {"timestamp": 0.0, "reason": "fan"}},
    }


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    return answering(monkeypatch, four_nodes_two_offline())


def test_list_counts_offline_ranks_down(offline: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert out(capsys) == (
        "     STATE NNODES NCORES NGPUS NODELIST\n"
        "      free      2      3     0 node[0-1]\n"
        " allocated      1      1     0 node0\n"
        "      down      2      4     0 node[2-3]\n"
    )


def test_status_marks_offline_ranks_as_flux_does(
    offline: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert resource.main(["status"]) == 0
    assert capsys.readouterr().out == (
        "       STATE UP NNODES NODELIST\n"
        "       avail  ✔      2 node[0-1]\n"
        "      avail*  ✗      1 node3\n"
        "    drained*  ✗      1 node2\n"
    )
    assert resource.main(["status", "-s", "offline", "-no", "{state} {ranks}"]) == 0
    assert capsys.readouterr().out == (
        "avail* 3\nexclude* \ntorpid* \nhousekeeping* \ndrained* 2\n"
    )
    assert resource.main(["status", "-s", "online", "-no", "{state} {ranks}"]) == 0
    assert capsys.readouterr().out == (
        "avail 0-1\nexclude \ntorpid \nhousekeeping \ndraining \n"  # no offline drained rank
    )


def test_status_counts_a_rank_that_never_joined(
    offline: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    offline["offline"] = "2-4"  # rank 4 never said hello: no host to name
    argv = ["status", "-s", "avail", "-no", "{state} {nnodes} {ranks} {nodelist}"]
    assert resource.main(argv) == 0
    assert capsys.readouterr().out == "avail 2 0-1 node[0-1]\navail* 2 3-4 node3\n"


def four_nodes_in_queues() -> dict[str, Any]:
    """node[0-3] (2 cores each): batch on ranks 0-1, debug on 2-3, foo on 0; one core of
    rank 0 and all of rank 2 allocated."""

    def ranks(cores: dict[int, str], properties: dict[str, str] | None = None) -> Any:
        targets = {n: Target(f"node{n}", IdSet.decode(c), IdSet()) for n, c in cores.items()}
        props = {name: IdSet.decode(ids) for name, ids in (properties or {}).items()}
        return ResourceSet(targets, properties=props).to_json()

    return {
        "all": ranks({0: "0-1", 1: "0-1", 2: "0-1", 3: "0-1"}, QUEUE_PROPERTIES),
        "allocated": ranks({0: "0", 2: "0-1"}),
        "down": ranks({}),
        "online": "0-3",
        "offline": "",
        "drained": "",
        "draining": "",
        "drain": {},
    }


QUEUE_PROPERTIES = {"batch": "0-1", "debug": "2-3", "foo": "0"}
# flux-core's t2350 queues: one with no requires (every rank), one per property
QUEUES = {
    "queues": {"every": {}, "batch": {"requires": ["batch"]}, "debug": {"requires": ["debug"]}}
}


@pytest.fixture
def queued(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    return answering(monkeypatch, four_nodes_in_queues(), QUEUES)


def test_default_format_shows_queues_and_other_properties(
    queued: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert out(capsys) == (
        "     STATE QUEUE       PROPERTIES NNODES NCORES NGPUS NODELIST\n"
        "      free every,batch foo             1      1     0 node0\n"
        "      free every,batch                 1      2     0 node1\n"
        "      free every,debug                 1      2     0 node3\n"
        " allocated every,batch foo             1      1     0 node0\n"
        " allocated every,debug                 1      2     0 node2\n"
        "      down every                       0      0     0 \n"
        "      down batch                       0      0     0 \n"
        "      down debug                       0      0     0 \n"
    )


def test_lines_split_by_the_queue_and_property_fields_shown(
    queued: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert out(capsys, "-no", "{state} {nnodes} {queue}") == (
        "free 2 every,batch\nfree 1 every,debug\n"
        "allocated 1 every,batch\nallocated 1 every,debug\n"
        "down 0 every\ndown 0 batch\ndown 0 debug\n"
    )
    assert out(capsys, "-no", "{state} {nnodes} {properties}") == (
        "free 1 batch,foo\nfree 1 batch\nfree 1 debug\n"
        "allocated 1 batch,foo\nallocated 1 debug\ndown 0 \n"
    )
    # the queues' names are not shown as properties: ranks 1 and 3 look alike
    assert out(capsys, "-no", "{state} {nnodes} {propertiesx}") == (
        "free 1 foo\nfree 2 \nallocated 1 foo\nallocated 1 \ndown 0 \n"
    )
    # one field, not state: a line per state, with every property of its ranks
    assert out(capsys, "-s", "free", "-no", "{properties}") == "batch,debug,foo\n"


def test_queue_option_keeps_the_queues_ranks_and_names_only_them(
    queued: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert out(capsys, "-q", "batch", "-no", "{state} {nnodes} {queue}") == (
        "free 2 batch\nallocated 1 batch\ndown 0 batch\n"
    )
    assert out(capsys, "--queue=every", "-no", "{state} {nnodes} {queue}") == (
        "free 3 every\nallocated 2 every\ndown 0 every\n"
    )
    text = out(capsys, "-q", "debug", "-q", "batch,debug", "-s", "down", "-no", "{queue} {state}")
    assert text == "batch down\ndebug down\n"  # in the configuration's order
    assert out(capsys, "-q", "batch", "-i", "node2", "-no", "{state} {nnodes} {queue}") == (
        "free 0 batch\nallocated 0 batch\ndown 0 batch\n"
    )
    assert out(capsys, "-q", "batch", "-no", "{state} {nnodes} {propertiesx}") == (
        "free 1 foo\nfree 1 \nallocated 1 foo\ndown 0 \n"
    )


def test_queue_option_of_info_r_status_and_drain(
    queued: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    assert resource.main(["info", "-q", "debug"]) == 0
    assert capsys.readouterr().out == "2 Nodes, 4 Cores, 0 GPUs\n"
    assert resource.main(["R", "-q", "debug", "-s", "free"]) == 0
    r = ResourceSet.from_json(json.loads(capsys.readouterr().out))
    assert (r.nodelist, dict(r.properties)) == (("node3",), {"debug": IdSet([3])})
    assert resource.main(["status", "-q", "batch", "-no", "{state} {nodelist}"]) == 0
    assert capsys.readouterr().out == "avail node[0-1]\n"
    assert resource.main(["status", "-q", "batch", "-i", "1-2", "-no", "{state} {nodelist}"]) == 0
    assert capsys.readouterr().out == "avail node1\n"  # the ranks of both
    queued["drain"] = {"1": {"timestamp": 0.0, "reason": "fan"}, "3": {"timestamp": 0.0}}
    assert resource.main(["drain", "-q", "debug", "-no", "{ranks} {reason}"]) == 0
    assert capsys.readouterr().out == "3 \n"


@pytest.mark.parametrize(
    "argv",
    [
        ["list", "-q", "nope"],
        ["info", "-q", "batch,nope"],
        ["R", "--queue", "nope"],
        ["status", "-q", "nope"],
        ["drain", "-q", "nope"],
    ],
)
def test_a_queue_not_configured_is_refused(
    queued: Any, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert resource.main(argv) == 1
    assert capsys.readouterr().err == "pflux-resource: ERROR: --queue: nope: no such queue\n"


def test_no_queue_is_configured(status: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert out(capsys, "-no", "{state} {queue}|{properties}") == "free |\nallocated |\ndown |\n"
    assert resource.main(["list", "-q", "batch"]) == 1
    assert "--queue: batch: no such queue" in capsys.readouterr().err


def test_drain_refuses_queue_with_targets(queued: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert resource.main(["drain", "-q", "batch", "0", "why"]) == 1
    assert "--queue selects the drained ranks listed: not with TARGETS" in capsys.readouterr().err
