"""``pflux resource list`` without an instance: states, formats and flux's sentinels."""

from __future__ import annotations

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


def answering(monkeypatch: pytest.MonkeyPatch, reply: dict[str, Any]) -> dict[str, Any]:
    """The client's handle answers ``sched.resource-status`` with ``reply``."""

    class FakeHandle:
        def __init__(self, uri: str | None, timeout: float | None = None) -> None:
            self.uri = uri
            self.hello = None  # no ping was made

        def close(self) -> None:
            pass

        def call(self, topic: str, payload: Any, *args: Any, **kwargs: Any) -> Any:
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
