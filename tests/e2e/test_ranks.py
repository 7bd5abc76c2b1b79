"""``pflux start --test-size=N``: N brokers on this machine, joined by the overlay.

Rank 0 is the instance the test starts; ranks 1..N-1 are its child processes,
each with a socket of its own that answers as that rank and passes what it does
not serve up to rank 0.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from pflux.client.handle import Handle
from pflux.errors import RPCError
from support.instance import LiveInstance, console, ok, wait_for_log
from support.mpi import HELLO
from support.raw import send_raw

TIMEOUT = 30.0


@pytest.fixture(scope="module")
def four(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveInstance]:
    where = tmp_path_factory.mktemp("ranks")
    args = ("--test-size=4", "-S", "tbon.heartbeat=0.1s", "-S", "tbon.timeout=1s")
    with LiveInstance(where / "s", *args, cores=4) as inst:
        yield inst


def rank_attrs(uri: str, rank: int) -> dict[str, str]:
    """Rank ``rank``'s attributes, asked of it through rank 0 (a request with a nodeid)."""
    with Handle(uri) as handle:
        rpc = send_raw(handle, "broker.attrs", None, nodeid=rank)
        assert rpc is not None
        attrs: dict[str, str] = rpc.get(TIMEOUT)["attrs"]
        return attrs


def test_the_instance_has_four_ranks_that_joined(four: LiveInstance) -> None:
    assert ok(four.uri, "getattr", "size").strip() == "4"
    dmesg = ok(four.uri, "dmesg")
    for rank in (1, 2, 3):
        assert f"overlay: rank {rank} ({socket.gethostname()}) joined" in dmesg
    assert "all 4 ranks are up" in dmesg


def test_a_rank_s_own_socket_answers_as_that_rank_and_reaches_rank_zero(
    four: LiveInstance,
) -> None:
    attrs = rank_attrs(four.uri, 2)
    assert attrs["rank"] == "2"
    assert attrs["size"] == "4"
    local = attrs["local-uri"]
    assert local != four.uri
    assert ok(local, "getattr", "rank").strip() == "2"
    # a service rank 2 lacks (job-list) is rank 0's, through the overlay
    assert "JOBID" in ok(local, "jobs", "-a")
    assert ok(local, "getattr", "rank", script=True).strip() == "2"
    assert "broker.info[2]: rank 2 of 4 serving" in ok(local, "dmesg")  # its own log


def test_flux_tools_address_a_rank_by_nodeid(four: LiveInstance) -> None:
    script = 'import flux; print(flux.Flux().rpc("broker.attrs", nodeid=3).get()["attrs"]["rank"])'
    proc = console("python", "-c", script, PFLUX_URI=four.uri, FLUX_URI=four.uri)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "3"


def test_a_rank_not_in_the_instance_is_unreachable(four: LiveInstance) -> None:
    with Handle(four.uri) as handle:
        rpc = send_raw(handle, "broker.attrs", None, nodeid=9)
        assert rpc is not None
        with pytest.raises(RPCError) as err:
            rpc.get(TIMEOUT)
    assert err.value.errnum == errno.EHOSTUNREACH
    assert "no rank 9 in this instance (size 4)" in str(err.value.errstr)


def test_a_killed_rank_is_down_at_once(tmp_path: Path) -> None:
    args = ("--test-size=3", "-S", "tbon.heartbeat=0.1s", "-S", "tbon.timeout=1s")
    with LiveInstance(tmp_path / "s", *args, cores=3) as inst:
        pid = int(rank_attrs(inst.uri, 2)["broker.pid"])
        os.kill(pid, signal.SIGKILL)
        wait_for_log(inst.uri, "lost contact with rank 2")
        dmesg = ok(inst.uri, "dmesg")
        assert f"rank 2's broker (pid {pid}) exited with status -9" in dmesg
        with pytest.raises(RPCError) as err:
            rank_attrs(inst.uri, 2)
        assert err.value.errnum == errno.EHOSTUNREACH
        assert "rank 2 is down" in str(err.value.errstr)
        assert rank_attrs(inst.uri, 1)["rank"] == "1"  # the others go on


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--test-size=0"], "--test-size=0: must be an integer >= 1"),
        (["--test-size=two"], "--test-size=two: must be an integer >= 1"),
        (["--test-hosts=a,b"], "--test-hosts: only with --test-size"),
        (["--test-size=3", "--test-hosts=n[0-1]"], "names 2 hosts, --test-size is 3"),
        (["-S", "tbon.fanout=0"], "-S tbon.fanout=0: tbon.fanout must be an integer >= 1"),
        (["-S", "tbon.timeout=x"], "-S tbon.timeout=x: tbon.timeout: "),
    ],
)
def test_bad_test_size_options_are_refused_naming_them(args: list[str], message: str) -> None:
    proc = console("start", *args, "true")
    assert proc.returncode != 0
    assert message in proc.stderr


def test_each_rank_has_its_share_of_the_cores_and_no_core_is_given_twice() -> None:
    listing = "pflux resource list -o rlist --states=free -n"
    for cores, expected in [
        ("2", "rank0/core0 rank1/core1"),
        ("5", "rank0/core[0-2] rank1/core[3-4]"),
    ]:
        proc = console("start", "--test-size=2", f"--cores={cores}", "sh", "-c", listing)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split()[-2:] == expected.split()
    mine = len(os.sched_getaffinity(0))
    if mine >= 2:  # this machine's CPUs, shared: as many cores in all as it has
        proc = console("start", "--test-size=2", "sh", "-c", "pflux resource list -no '{ncores}'")
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.split()[0] == str(mine)
    few = console("start", "--test-size=3", "--cores=2", "true")
    assert few.returncode == 1
    assert "--test-size=3: each rank needs a core of its own, and the instance has 2" in few.stderr


def test_test_size_is_refused_with_simulate(tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    trace.write_text("")
    proc = console("start", "--test-size=2", f"--simulate={trace}", "true")
    assert proc.returncode != 0
    assert "--test-size: cannot be combined with --simulate" in proc.stderr


def test_test_hosts_name_the_ranks(tmp_path: Path) -> None:
    proc = console(
        "start",
        "--test-size=2",
        "--cores=2",
        "--test-hosts=fake[0-1]",
        "sh",
        "-c",
        "pflux getattr hostlist; pflux dmesg",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "fake[0-1]"
    assert "overlay: rank 1 (fake1) joined" in proc.stdout


def test_tbon_attributes_shape_the_tree() -> None:
    script = (
        "import flux; h = flux.Flux();"
        "a = lambda r: h.rpc('broker.attrs', nodeid=r).get()['attrs'];"
        "print(a(2)['tbon.parent-endpoint'].rsplit('/', 1)[1], a(0)['tbon.timeout'],"
        " a(2)['tbon.heartbeat'], a(2)['broker.quorum-timeout'])"
    )
    proc = console(
        "start",
        "--test-size=3",
        "--cores=3",
        "-S",
        "tbon.fanout=1",
        "-S",
        "tbon.timeout=2.5s",
        "-S",
        "tbon.heartbeat=0.5s",
        "-S",
        "broker.quorum-timeout=1m",
        "flux",
        "python",
        "-c",
        script,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["tbon-1", "2.5s", "0.5s", "60s"]  # a chain: 0 - 1 - 2


def test_a_job_over_four_ranks_runs_a_shell_on_each(four: LiveInstance) -> None:
    out = ok(four.uri, "run", "-N4", "-n4", "--label-io", "printenv", "FLUX_URI")
    uris = dict(line.split(": ", 1) for line in out.splitlines())
    assert uris["0"] == four.uri
    for rank in (1, 2, 3):  # each task talks to the broker of its rank
        assert uris[str(rank)] == rank_attrs(four.uri, rank)["local-uri"]


def test_a_rank_killed_under_a_job_fails_it_and_frees_the_rest(tmp_path: Path) -> None:
    args = ("--test-size=3", "-S", "tbon.heartbeat=0.1s", "-S", "tbon.timeout=1s")
    with LiveInstance(tmp_path / "s", *args, cores=3) as inst:
        pid = int(rank_attrs(inst.uri, 2)["broker.pid"])
        job = ok(inst.uri, "submit", "-N3", "-n3", "sleep", "300").strip()
        ok(inst.uri, "job", "wait-event", "-t", "30", job, "start")
        os.kill(pid, signal.SIGKILL)
        ok(inst.uri, "job", "wait-event", "-t", "30", job, "clean")
        events = ok(inst.uri, "job", "eventlog", job)
        note = f"lost contact with job shell on {socket.gethostname()} (rank 2)"
        assert f'exception type="exec" severity=0 note="{note}"' in events
        assert 'release ranks="2" final=false' in events
        # ranks 0 and 1 are free again; rank 2 is down
        assert ok(inst.uri, "run", "-N2", "-n2", "true") == ""
        down = ok(inst.uri, "resource", "status", "-s", "offline", "-n", "-o", "{ranks}")
        assert down.strip() == "2"


def test_an_mpi_allreduce_over_four_tasks_on_two_ranks(tmp_path: Path) -> None:
    mpicc = shutil.which("mpicc")
    if mpicc is None:
        pytest.skip("mpicc not found: install MPICH (apt-get install mpich libmpich-dev)")
    program = tmp_path / "mpi_hello"
    (tmp_path / "mpi_hello.c").write_text(HELLO)
    subprocess.run([mpicc, "-o", str(program), str(tmp_path / "mpi_hello.c")], check=True)
    with LiveInstance(tmp_path / "s", "--test-size=2", cores=4) as inst:
        out = ok(inst.uri, "run", "-N2", "-n4", "--label-io", str(program))
    assert sorted(out.splitlines()) == [f"{r}: rank {r} of 4: sum 6" for r in range(4)]


@pytest.mark.parametrize(("topic", "where"), [("exec-node.send", 1), ("job-exec.records", 0)])
def test_records_between_ranks_are_refused_from_a_client(
    four: LiveInstance, topic: str, where: int
) -> None:
    uri = rank_attrs(four.uri, where)["local-uri"]
    with Handle(uri) as handle:
        rpc = send_raw(handle, topic, {"data": "x"})
        assert rpc is not None
        with pytest.raises(RPCError) as err:
            rpc.get(TIMEOUT)
    assert err.value.errnum == errno.EPERM


def test_the_hostname_attribute_places_a_broker_among_bootstrap_hosts(tmp_path: Path) -> None:
    cert = tmp_path / "cert"
    assert console("keygen", str(cert)).returncode == 0
    config = tmp_path / "one.toml"
    config.write_text(f'[bootstrap]\ncurve_cert = "{cert}"\nhosts = [{{ host = "fake0" }}]\n')
    show = "pflux getattr hostname; pflux getattr tbon.fanout"
    ran = console("start", "--config", str(config), "-S", "hostname=fake0", "sh", "-c", show)
    # a [bootstrap] config's tree is flat unless -S tbon.fanout says otherwise
    assert (ran.returncode, ran.stdout) == (0, "fake0\n1\n"), ran.stderr
    refused = console("start", "--config", str(config), "true")
    assert refused.returncode == 1
    assert f"[bootstrap] hosts: {socket.gethostname()} not found in hosts" in refused.stderr


def test_a_job_of_two_nodes_runs_an_instance_of_two_brokers(tmp_path: Path) -> None:
    """``pflux run -N2 pflux start``: the job's shells serve PMI-1, which the brokers
    bootstrap from, one per node of the job."""
    inner = "pflux getattr size; pflux run -N2 -n2 --label-io printenv FLUX_URI"
    with LiveInstance(tmp_path / "s", "--test-size=2", cores=2) as inst:
        out = ok(inst.uri, "run", "-N2", "-n2", "pflux", "start", "sh", "-c", inner)
    size, *uris = out.splitlines()
    assert size == "2"
    assert sorted(line.split(": ")[0] for line in uris) == ["0", "1"]
    assert len({line.split(": ")[1] for line in uris}) == 2  # a broker of its own on each
