"""A guest's job with a shell on a rank above 0: brokers on two hosts (``support.netns``)
of the instance account ``pfluxsec1``, with its privileged helper, and ``pfluxsec2`` a
guest submitting with the real ``pflux`` command, signed under MUNGE.

Rank 0's broker killed (SIGKILL) and restarted while rank 1's goes on: rank 1's exec-node,
told again which jobs it runs (``exec-node.keep``), lets go of its launcher and of the
guest's records socket, and the guest's shell there meets it at its rendezvous, as one
of rank 0 meets a restarted job-exec: the job ends with its status and all its output,
run once. At that rendezvous exec-node takes the job's connection only from the shell its
launcher's journal names, running as the job's user.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest

from pflux.protocol import shellwire as wire
from pflux.spec.fluid import JobID
from support import netns
from support.hosts import FAST, bootstrap_config, keygen
from support.imp import Helper
from support.instance import PFLUX, LiveInstance, read_fifo
from support.munge import munged
from support.users import User

__all__ = ["munged"]

_why = netns.skip_reason()
pytestmark = pytest.mark.skipif(_why is not None, reason=f"no separate hosts here: {_why}")

HOSTS = 2
TIMEOUT = "120"

CONNECT = """
import socket, sys
sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
sock.settimeout(60)
try:
    sock.connect(f"/proc/self/fd/{sys.argv[1]}/{sys.argv[2]}")
except OSError as exc:
    print(type(exc).__name__)
    sys.exit()
print("hung up" if sock.recv(1 << 16) == b"" else "given records")
"""


class Site:
    """Two hosts, each with a broker of the instance account's; the helper; the guest."""

    def __init__(self, net: netns.Network, base: Path, inst: User, guest: User) -> None:
        self.net, self.base, self.inst, self.guest = net, base, inst, guest
        self.home = Path(tempfile.mkdtemp(dir=inst.home))  # the account's, for this test
        os.chown(self.home, inst.uid, inst.gid)
        self.home.chmod(0o755)  # the guest reaches the instance's socket below
        self.mine = Path(tempfile.mkdtemp(dir=guest.home))  # the guest's
        os.chown(self.mine, guest.uid, guest.gid)
        self.helper = Helper(base, inst.name, inst.python)
        self.rank1: subprocess.Popen[bytes] | None = None
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    def _start(self) -> None:
        inst = self.inst
        cert = keygen(self.home / "cert")
        os.chown(cert, inst.uid, inst.gid)
        self.config = bootstrap_config(
            self.home,
            cert,
            HOSTS,
            f'[access]\nallow-guest-user = true\n[exec]\nimp = "{self.helper.socket}"\n',
        )
        self.config.chmod(0o644)
        self.state = self.home / "state"
        self.rank1_state = self.home / "rank1-state"
        self.rank1 = self.start_rank1()
        self.rank0 = self.start_rank0()

    def _as_inst(self, rank: int) -> list[str]:
        ids = [f"--reuid={self.inst.uid}", f"--regid={self.inst.gid}", "--clear-groups"]
        return self.net.command(rank, ["setpriv", *ids, "--inh-caps=-all", self.inst.python])

    def start_rank1(self) -> subprocess.Popen[bytes]:
        argv = [*self._as_inst(1), str(PFLUX), "start", *FAST, "--config", str(self.config)]
        argv += ["--state-dir", str(self.rank1_state)]
        with (self.base / "rank1.log").open("a") as log:
            return subprocess.Popen(
                argv, stdout=log, stderr=log, env=self.inst.env(), start_new_session=True
            )

    def start_rank0(self) -> LiveInstance:
        with mock.patch.dict(os.environ, self.inst.env(), clear=True):
            return LiveInstance(
                self.state, *FAST, "--config", str(self.config), cores=None,
                prefix=self._as_inst(0),
            )  # fmt: skip

    def pflux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.guest.pflux(*args, PFLUX_URI=self.rank0.uri)

    def fifo(self, name: str) -> Path:
        path = self.mine / name
        os.mkfifo(path, 0o600)
        os.chown(path, self.guest.uid, self.guest.gid)
        return path

    def wait_for_rank1_log(self, text: str) -> None:
        """Follow rank 1's own log until a line holds ``text``."""
        with subprocess.Popen(
            [self.inst.python, str(PFLUX), "dmesg", "-f"],
            user=self.inst.uid, group=self.inst.gid, extra_groups=[],
            env=self.inst.env(PFLUX_URI=f"local://{self.rank1_state}/local"),
            stdout=subprocess.PIPE, text=True,
        ) as follower:  # fmt: skip
            assert follower.stdout is not None
            deadline = threading.Timer(60, follower.kill)  # a log that never says it
            deadline.start()
            found = any(text in line for line in follower.stdout)
            deadline.cancel()
            follower.kill()
        assert found, f"rank 1's log ended before {text!r}"

    def close(self) -> None:
        rank0 = getattr(self, "rank0", None)
        if rank0 is not None and rank0.proc.poll() is None:
            rank0.stop()
        if self.rank1 is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.rank1.wait(timeout=30)
            if self.rank1.poll() is None:
                self.rank1.kill()
                self.rank1.wait()
        self.helper.close()


@pytest.fixture
def site(other_users: tuple[User, User], munged: None) -> Iterator[Site]:
    inst, guest = other_users
    base = Path(tempfile.mkdtemp(prefix="pflux-hosts-"))
    base.chmod(0o755)
    try:
        with netns.Network(HOSTS) as net:
            site = Site(net, base, inst, guest)
            try:
                yield site
            finally:
                site.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def submit_over_both_ranks(s: Site) -> tuple[str, dict[int, Path], dict[int, int]]:
    """A guest's job with a task on each rank, each waiting on a FIFO of its rank's once
    started: its id, those FIFOs and each rank's shell's pid."""
    gates = {rank: s.fifo(f"gate{rank}") for rank in range(HOSTS)}
    shells = {rank: s.fifo(f"shell{rank}") for rank in range(HOSTS)}
    script = (
        f"echo $PPID > {s.mine}/shell$FLUX_TASK_RANK; echo before $FLUX_TASK_RANK; "
        f"read go < {s.mine}/gate$FLUX_TASK_RANK; echo $go $FLUX_TASK_RANK $(id -u)"
    )
    submitted = s.pflux("submit", "-N2", "-n2", "sh", "-c", script)
    jobid = submitted.stdout.strip()
    assert jobid, (submitted.stderr, s.helper.log)
    pids = {rank: int(read_fifo(path, 120)) for rank, path in shells.items()}
    started = s.pflux("job", "wait-event", "-t", TIMEOUT, jobid, "start")
    assert started.returncode == 0, (started.stderr, s.helper.log)
    return jobid, gates, pids


def restart_rank0(s: Site, *, rank1_too: bool = False) -> None:
    """SIGKILL rank 0's broker, and with ``rank1_too`` rank 1's after it (before rank 0
    could lose rank 1), and start them again; else rank 1 goes on, and says hello to the
    next rank 0."""
    s.rank0.kill()
    if rank1_too:
        assert s.rank1 is not None
        s.rank1.kill()
        s.rank1.wait()
        s.rank1 = s.start_rank1()
    s.rank0 = s.start_rank0()


def release_and_check(s: Site, jobid: str, gates: dict[int, Path]) -> None:
    """Let each task end; the job ends with its status and all its output, run once."""
    writers = [os.open(gate, os.O_RDWR) for gate in gates.values()]  # never blocks
    try:
        for writer in writers:
            os.write(writer, b"done\n")
        done = s.pflux("job", "wait-event", "-t", TIMEOUT, jobid, "clean")
        assert done.returncode == 0, (done.stderr, s.helper.log)
    finally:
        for writer in writers:
            os.close(writer)
    events = s.pflux("job", "eventlog", jobid).stdout
    status = s.pflux("job", "status", jobid)
    assert status.returncode == 0, events
    assert [line.split()[1] for line in events.splitlines()].count("start") == 1, events
    output = s.pflux("job", "attach", jobid).stdout
    expected = [f"before {r}" for r in range(HOSTS)]
    expected += [f"done {r} {s.guest.uid}" for r in range(HOSTS)]
    assert sorted(output.splitlines()) == sorted(expected), (output, events)


@pytest.mark.parametrize("rank1_too", [False, True], ids=["alone", "with-rank-1"])
def test_a_guests_shell_on_rank_1_meets_its_exec_node_when_rank_0_restarts(
    site: Site, rank1_too: bool
) -> None:
    """Rank 0's broker killed and restarted, alone or with rank 1's: the guest's shells on
    both ranks meet theirs, and the job ends as it would have."""
    jobid, gates, _ = submit_over_both_ranks(site)
    restart_rank0(site, rank1_too=rank1_too)
    release_and_check(site, jobid, gates)


def test_exec_node_takes_a_guests_connection_only_from_its_shell(site: Site) -> None:
    """The shell on rank 1 stopped while exec-node listens for it: root, then another
    process of the job's user holding the rendezvous' descriptor, are hung up on; the
    shell, let go on, is met."""
    s = site
    jobid, gates, pids = submit_over_both_ranks(s)
    os.kill(pids[1], signal.SIGSTOP)
    try:
        restart_rank0(s)
        s.wait_for_rank1_log("listening for guests' job shells")
        key = wire.shell_key(int(JobID(jobid)), 1)
        rendezvous = s.rank1_state / "exec" / "guests"
        assert (rendezvous / str(key)).exists()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)  # root: not the job's user
        sock.connect(str(rendezvous / str(key)))
        sock.settimeout(60)
        assert sock.recv(1 << 16) == b""
        sock.close()
        fd = os.open(rendezvous, os.O_PATH | os.O_DIRECTORY)
        try:
            impostor = subprocess.run(
                [s.guest.python, "-c", CONNECT, str(fd), str(key)],
                user=s.guest.uid, group=s.guest.gid, extra_groups=[], env=s.guest.env(),
                cwd=s.guest.home, pass_fds=[fd], capture_output=True, text=True, timeout=120,
                check=False,
            )  # fmt: skip
        finally:
            os.close(fd)
        assert impostor.stdout.strip() == "hung up", impostor.stderr
        assert (rendezvous / str(key)).exists()  # listening on for the shell
    finally:
        os.kill(pids[1], signal.SIGCONT)
    release_and_check(s, jobid, gates)
