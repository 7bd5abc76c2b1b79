"""Brokers on separate hosts: network namespaces joined by veth pairs, one broker in
each, talking TCP with CURVE, bootstrapped from a ``[bootstrap]`` config as a system
instance is, or from Slurm's environment as ``srun`` gives it."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from pflux.exec.service import STOP_AT_REMOTE_ASK
from pflux.spec.fluid import JobID
from support import netns
from support.crash import helpers, is_launcher
from support.hosts import FAST, PORT, bootstrap_config, keygen
from support.instance import PFLUX, LiveInstance, environ, pflux, read_fifo, wait_for_log
from support.mpi import HELLO
from support.procs import pidfd_wait

_why = netns.skip_reason()
pytestmark = pytest.mark.skipif(_why is not None, reason=f"no separate hosts here: {_why}")

HOSTS = 3


def srun_environment(rank: int) -> list[str]:
    """What ``srun -N3 --ntasks-per-node=1`` gives its task on node ``rank``, as ``env``
    arguments."""
    variables = {
        "SLURM_JOB_ID": "4242",
        "SLURM_STEP_ID": "0",
        "SLURM_PROCID": str(rank),
        "SLURM_NODEID": str(rank),
        "SLURM_LOCALID": "0",
        "SLURM_STEP_NUM_NODES": str(HOSTS),
        "SLURM_STEP_NUM_TASKS": str(HOSTS),
        "SLURM_STEP_NODELIST": f"node[0-{HOSTS - 1}]",
        "SLURM_JOB_NODELIST": f"node[0-{HOSTS - 1}]",
        "SLURM_TASKS_PER_NODE": f"1(x{HOSTS})",
        "SLURM_STEP_RESV_PORTS": f"{PORT + 10}-{PORT + 12}",
        "SLURMD_NODENAME": f"node{rank}",
    }
    return ["env", *(f"{name}={value}" for name, value in variables.items())]


@contextlib.contextmanager
def brokers(
    net: netns.Network,
    tmp_path: Path,
    per_rank: dict[int, list[str]],
    *extra: str,
    env: dict[int, list[str]] | None = None,
    outsiders: tuple[int, ...] = (),
) -> Iterator[LiveInstance]:
    """Ranks 1.. started on their hosts with ``per_rank[r]`` options, then rank 0 (which
    waits for them) with an initial program holding it open: the instance, once ready.
    The ranks in ``outsiders`` never get in, so are never told to stop: they get SIGTERM."""
    procs = []
    try:
        for rank in range(1, HOSTS):
            argv = [*(env or {}).get(rank, []), str(PFLUX), "start", *FAST, *extra, *per_rank[rank]]
            with (tmp_path / f"rank{rank}.log").open("w") as log:
                procs.append(
                    subprocess.Popen(
                        net.command(rank, argv),
                        stdout=log,
                        stderr=log,
                        env=environ(),
                        start_new_session=True,
                    )
                )
        with LiveInstance(
            tmp_path / "state", *FAST, *extra, *per_rank[0], cores=None,
            prefix=net.command(0, (env or {}).get(0, [])),
        ) as instance:  # fmt: skip
            yield instance
    finally:
        for rank in outsiders:
            procs[rank - 1].terminate()
        for proc in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@pytest.fixture
def same(tmp_path: Path) -> dict[int, list[str]]:
    """Every rank's options: one [bootstrap] config, with one instance certificate."""
    config = bootstrap_config(tmp_path, keygen(tmp_path / "cert"), HOSTS)
    return {rank: ["--config", str(config)] for rank in range(HOSTS)}


@pytest.fixture
def net() -> Iterator[netns.Network]:
    with netns.Network(HOSTS) as network:
        yield network


def test_brokers_on_three_hosts_are_one_instance(
    net: netns.Network, tmp_path: Path, same: dict[int, list[str]]
) -> None:
    with brokers(net, tmp_path, same) as instance:
        assert pflux(instance.uri, "getattr", "size").stdout.strip() == str(HOSTS)
        listing = pflux(instance.uri, "resource", "list", "-n", "-o", "{state} {nnodes} {nodelist}")
        assert listing.stdout.split("\n")[0].split() == ["free", str(HOSTS), "node[0-2]"], listing
        log = pflux(instance.uri, "dmesg").stdout
        assert "overlay: rank 1 (node1) joined" in log
        assert "overlay: rank 2 (node2) joined" in log


def test_a_broker_with_another_certificate_is_refused(net: netns.Network, tmp_path: Path) -> None:
    config = bootstrap_config(tmp_path, keygen(tmp_path / "cert"), HOSTS)
    stranger = tmp_path / "stranger"
    stranger.mkdir()
    other = bootstrap_config(stranger, keygen(stranger / "cert"), HOSTS)
    options = {0: ["--config", str(config)], 1: ["--config", str(config)]}
    options[2] = ["--config", str(other)]
    quorum = ("-S", "broker.quorum-timeout=2s")
    with brokers(net, tmp_path, options, *quorum, outsiders=(2,)) as instance:
        status = pflux(instance.uri, "resource", "status", "-s", "offline", "-n", "-o", "{ranks}")
        assert status.stdout.strip() == "2"
        log = pflux(instance.uri, "dmesg").stdout
        assert f"overlay: refused a connection to tcp://0.0.0.0:{PORT}: its CURVE handshake" in log
        assert "rank 2 (node2) joined" not in log


def test_a_cut_link_is_a_lost_node_that_rejoins(
    net: netns.Network, tmp_path: Path, same: dict[int, list[str]]
) -> None:
    with brokers(net, tmp_path, same) as instance:
        net.cut(2)
        wait_for_log(instance.uri, "overlay: lost contact with rank 2 (node2)")
        down = pflux(instance.uri, "resource", "status", "-s", "offline", "-n", "-o", "{ranks}")
        assert down.stdout.strip() == "2"
        net.restore(2)
        wait_for_log(instance.uri, "overlay: rank 2 (node2) joined", after=1)
        up = pflux(instance.uri, "resource", "status", "-s", "offline", "-n", "-o", "{ranks}")
        assert up.stdout.strip() == ""


def test_brokers_started_by_srun_are_one_instance(net: netns.Network, tmp_path: Path) -> None:
    cert = keygen(tmp_path / "cert")
    options = {rank: ["--curve-cert", str(cert)] for rank in range(HOSTS)}
    env = {rank: srun_environment(rank) for rank in range(HOSTS)}
    with brokers(net, tmp_path, options, env=env) as instance:
        assert pflux(instance.uri, "getattr", "size").stdout.strip() == str(HOSTS)
        endpoint = pflux(instance.uri, "getattr", "tbon.endpoint").stdout.strip()
        assert endpoint == f"tcp://0.0.0.0:{PORT + 10}"  # the step's first reserved port
        status = pflux(instance.uri, "resource", "status", "-n", "-o", "{state} {nodelist}")
        assert status.stdout.split() == ["avail", "node[0-2]"]


def test_srun_brokers_without_a_certificate_are_refused(tmp_path: Path) -> None:
    env = dict(pair.split("=", 1) for pair in srun_environment(0)[1:])
    refused = subprocess.run(
        [str(PFLUX), "start", "true"], capture_output=True, text=True, env=environ(**env),
        timeout=60, check=False,
    )  # fmt: skip
    assert refused.returncode == 1
    assert refused.stderr == (
        "pflux-start: ERROR: Slurm: an instance of 3 nodes needs the instance certificate"
        " (--curve-cert=FILE or [bootstrap] curve_cert; make one with pflux keygen)\n"
    )


def test_a_job_runs_a_shell_on_each_host(
    net: netns.Network, tmp_path: Path, same: dict[int, list[str]]
) -> None:
    with brokers(net, tmp_path, same) as instance:
        ran = pflux(instance.uri, "run", f"-N{HOSTS}", f"-n{HOSTS}", "--label-io", "hostname")
        assert sorted(ran.stdout.split("\n")[:-1]) == [f"{r}: node{r}" for r in range(HOSTS)]
        uris = pflux(instance.uri, "run", "-N3", "-n3", "--label-io", "printenv", "FLUX_URI")
        # each task talks to the broker of its own host
        assert len(set(uris.stdout.split())) == 2 * HOSTS


def test_a_host_cut_off_fails_its_jobs_and_frees_the_rest(
    net: netns.Network, tmp_path: Path, same: dict[int, list[str]]
) -> None:
    with brokers(net, tmp_path, same) as instance:
        pids = tmp_path / "pids"
        pids.mkdir()
        script = f"echo $$ > {pids}/$FLUX_TASK_RANK; exec sleep 300"
        jobid = pflux(instance.uri, "submit", "-N3", "-n3", "sh", "-c", script).stdout.strip()
        ok = pflux(instance.uri, "job", "wait-event", "-t", "60", jobid, "start")
        assert ok.returncode == 0, ok.stderr
        net.cut(2)
        ended = pflux(instance.uri, "job", "wait-event", "-t", "60", jobid, "clean")
        assert ended.returncode == 0, ended.stderr
        log = pflux(instance.uri, "job", "eventlog", jobid).stdout
        note = "lost contact with job shell on node2 (rank 2)"
        assert f'exception type="exec" severity=0 note="{note}"' in log
        assert 'release ranks="2" final=false' in log  # at once: its shell cannot say
        # the two hosts still up are free for the next job
        again = pflux(instance.uri, "run", "-N2", "-n2", "--label-io", "hostname")
        assert sorted(again.stdout.split("\n")[:-1]) == ["0: node0", "1: node1"]
        # node2's task, which the kill could not reach, ends once node2 is back
        task = int((pids / "2").read_text())
        net.restore(2)
        wait_for_log(instance.uri, "overlay: rank 2 (node2) joined", after=1)
        assert pidfd_wait([task], 30) == []


def test_an_mpi_allreduce_across_hosts(
    net: netns.Network, tmp_path: Path, same: dict[int, list[str]]
) -> None:
    mpicc = shutil.which("mpicc")
    if mpicc is None:
        pytest.skip("mpicc not found: install MPICH (apt-get install mpich libmpich-dev)")
    program = tmp_path / "mpi_hello"
    source = tmp_path / "mpi_hello.c"
    source.write_text(HELLO)
    subprocess.run([mpicc, "-o", str(program), str(source)], check=True, timeout=120)
    with brokers(net, tmp_path, same) as instance:
        ran = pflux(instance.uri, "run", f"-N{HOSTS}", f"-n{2 * HOSTS}", str(program))
    total = sum(range(2 * HOSTS))
    expected = [f"rank {r} of {2 * HOSTS}: sum {total}" for r in range(2 * HOSTS)]
    assert sorted(ran.stdout.splitlines()) == sorted(expected), ran.stderr


def kill_rank_zero(instance: LiveInstance, launcher_too: bool) -> None:
    """SIGKILL rank 0's broker, and with ``launcher_too`` its launcher at the same moment
    (the broker stopped first, so that it starts no other)."""
    if launcher_too:
        state = instance.state_dir
        [launcher] = [pid for pid in helpers(state, instance.proc.pid) if is_launcher(pid)]
        os.killpg(instance.proc.pid, signal.SIGSTOP)
        os.kill(launcher, signal.SIGKILL)
    instance.kill()


@pytest.mark.parametrize("launcher_too", [False, True], ids=["broker", "broker and launcher"])
def test_rank_zero_restarted_keeps_its_jobs_and_the_hosts_rejoin(
    net: netns.Network, tmp_path: Path, same: dict[int, list[str]], launcher_too: bool
) -> None:
    with brokers(net, tmp_path, same) as instance:
        done = pflux(instance.uri, "submit", "-N3", "-n3", "hostname").stdout.strip()
        assert pflux(instance.uri, "job", "wait-event", "-t", "60", done, "clean").returncode == 0
        held = pflux(instance.uri, "submit", "--urgency=hold", "-N3", "-n3", "hostname")
        gates = tmp_path / "gates"
        gates.mkdir()
        for rank in range(HOSTS):
            os.mkfifo(gates / str(rank))
        script = f"read go < {gates}/$FLUX_TASK_RANK; echo $go from $(hostname)"
        running = pflux(instance.uri, "submit", "-N3", "-n3", "sh", "-c", script).stdout.strip()
        assert (
            pflux(instance.uri, "job", "wait-event", "-t", "60", running, "start").returncode == 0
        )
        kill_rank_zero(instance, launcher_too)  # ranks 1 and 2 go on, saying hello
        with LiveInstance(
            tmp_path / "state", *FAST, *same[0], cores=None,
            prefix=net.command(0, []),
        ) as again:  # fmt: skip
            log = pflux(again.uri, "dmesg").stdout
            assert "overlay: rank 1 (node1) joined" in log
            assert "overlay: rank 2 (node2) joined" in log
            assert pflux(again.uri, "jobs", "-n", "-o", "{result}", done).stdout == "COMPLETED\n"
            jobid = held.stdout.strip()
            assert pflux(again.uri, "job", "urgency", jobid, "16").returncode == 0
            ran = pflux(again.uri, "job", "attach", jobid)
            assert sorted(ran.stdout.split()) == ["node0", "node1", "node2"], ran.stderr
            # the running job is taken over on every host, and ends as it would have
            for rank in range(HOSTS):
                with (gates / str(rank)).open("w") as gate:
                    gate.write("done\n")
            out = pflux(again.uri, "job", "attach", running)
            assert out.returncode == 0, out.stderr
            assert sorted(out.stdout.splitlines()) == [f"done from node{r}" for r in range(HOSTS)]
            events = pflux(again.uri, "job", "eventlog", "-p", "exec", running).stdout
            assert "reattach" in events


def test_a_job_no_host_had_begun_when_rank_zero_and_its_launcher_died_runs_once(
    net: netns.Network, tmp_path: Path, same: dict[int, list[str]]
) -> None:
    """job-exec journalled asking for the job's three shells, and stopped before asking
    (its test hook): ranks 1 and 2 say they were never asked, so the restart starts it."""
    asked, runs = tmp_path / "asked", tmp_path / "runs"
    runs.mkdir()
    hook = {0: ["env", f"{STOP_AT_REMOTE_ASK}={asked}"]}
    with brokers(net, tmp_path, same, env=hook) as instance:
        # a job on every host first: each rank has long answered rank 0 with its incarnation
        ran = pflux(instance.uri, "run", "-N3", "-n3", "true")
        assert ran.returncode == 0, ran.stderr
        os.mkfifo(asked)  # the hook's, from now on
        script = f"echo ran >> {runs}/$FLUX_TASK_RANK"
        jobid = pflux(instance.uri, "submit", "-N3", "-n3", "sh", "-c", script).stdout.strip()
        # rank 0's job-exec has journalled the shells, and stopped its broker before sending
        assert read_fifo(asked, timeout=60) == str(int(JobID(jobid)))
        kill_rank_zero(instance, launcher_too=True)  # ranks 1 and 2 go on, never asked
        assert not list(runs.iterdir())
        with LiveInstance(
            tmp_path / "state", *FAST, *same[0], cores=None,
            prefix=net.command(0, []),
        ) as again:  # fmt: skip
            waited = pflux(again.uri, "job", "wait-event", "-t", "120", jobid, "clean")
            assert waited.returncode == 0, waited.stderr
            result = pflux(again.uri, "jobs", "-n", "-o", "{result}", jobid).stdout
            events = pflux(again.uri, "job", "eventlog", jobid).stdout
            assert result == "COMPLETED\n", events
            assert [line.split()[1] for line in events.splitlines()].count("start") == 1
    assert sorted(p.name for p in runs.iterdir()) == ["0", "1", "2"]
    assert all(p.read_text() == "ran\n" for p in runs.iterdir())  # each task once
