"""Guests' jobs run as the guests: an instance of ``pfluxsec1``'s (the instance account)
with ``[exec] imp``, the privileged helper started as root, and ``pfluxsec2`` a guest
submitting with the real ``pflux`` command, its job request signed under MUNGE.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.imp import Helper
from support.instance import PFLUX, LiveInstance, read_fifo, wait_exit
from support.munge import munged
from support.policy import UNDER_OTHER
from support.users import User

__all__ = ["munged"]


# argv[1]: the URI; J signed by the user running this for the jobspec argv[2], its payload
# then changed to the jobspec argv[3], submitted: the job's id
CHANGED_AFTER_SIGNING = """
import base64, sys
from pflux.client.handle import Handle
from _pfluxcore.sign import wrap
header, _, credential = wrap(sys.argv[2]).split(".")
payload = base64.urlsafe_b64encode(sys.argv[3].encode()).decode().rstrip("=")
with Handle(sys.argv[1]) as h:
    print(h.call("job-ingest.submit", {"J": f"{header}.{payload}.{credential}"})["id"])
"""


class Site:
    """The instance, its helper, its account and a guest."""

    def __init__(self, live: LiveInstance, helper: Helper, inst: User, guest: User) -> None:
        self.live, self.helper = live, helper
        self.inst, self.guest = inst, guest

    def pflux(self, user: User, *args: str) -> tuple[int, str, str]:
        proc = user.pflux(*args, PFLUX_URI=self.live.uri)
        return proc.returncode, proc.stdout, proc.stderr

    def ok(self, user: User, *args: str) -> str:
        rc, out, err = self.pflux(user, *args)
        assert rc == 0, (err, self.helper.log)
        return out

    def signed_under_munge(self, jobid: str) -> bool:
        """Whether the job's J is signed under MUNGE (submission signs guests' jobs so)."""
        signed = self.ok(self.guest, "job", "info", jobid, "J").strip()
        header = signed.split(".", 1)[0]
        header += "=" * (-len(header) % 4)
        return bool(json.loads(base64.urlsafe_b64decode(header))["mechanism"] == "munge")


@pytest.fixture(scope="module")
def site(other_users: tuple[User, User], munged: None) -> Iterator[Site]:
    inst, guest = other_users
    base = Path(tempfile.mkdtemp(prefix="pflux-site-"))
    base.chmod(0o755)
    helper = Helper(base, inst.name, inst.python)
    config = inst.home / "site.toml"
    config.write_text(f'[access]\nallow-guest-user = true\n[exec]\nimp = "{helper.socket}"\n')
    config.chmod(0o644)
    try:
        with inst.instance(inst.home / "site-state", "--config", str(config)) as live:
            yield Site(live, helper, inst, guest)
    finally:
        helper.close()
        shutil.rmtree(base, ignore_errors=True)


def test_a_guests_job_runs_as_the_guest(site: Site) -> None:
    s = site
    out = s.guest.home / "job.out"
    script = "id -u; id -G; stat -c %u $FLUX_JOB_TMPDIR; touch made-by-job; stat -c %u made-by-job"
    jobid = s.ok(
        s.guest, "submit", f"--output={out}", "--setopt=rlimit.nofile=123", "sh", "-c",
        script + "; ulimit -n",
    ).strip()  # fmt: skip
    s.ok(s.guest, "job", "wait-event", "-t", "120", jobid, "clean")
    if not s.signed_under_munge(jobid):
        pytest.skip("job submission here does not sign a guest's job under MUNGE")
    rc, _, err = s.pflux(s.guest, "job", "status", jobid)
    assert rc == 0, (err, s.ok(s.guest, "job", "eventlog", jobid), s.helper.log)
    lines = out.read_text().splitlines()
    uid = str(s.guest.uid)
    assert lines[0] == uid
    assert str(s.guest.gid) in lines[1].split()
    assert lines[2] == uid  # FLUX_JOB_TMPDIR
    assert lines[3] == uid  # a file it made in its cwd (the guest's home, where it submitted)
    assert lines[4] == "123"
    assert out.stat().st_uid == s.guest.uid
    assert (s.guest.home / "made-by-job").stat().st_uid == s.guest.uid


def test_the_owners_jobs_run_as_before_beside_a_guests(site: Site) -> None:
    s = site
    assert s.ok(s.inst, "run", "id", "-u").strip() == str(s.inst.uid)
    got = s.pflux(s.guest, "run", "id", "-u")
    jobid = s.ok(s.guest, "job", "last").strip()
    if not s.signed_under_munge(jobid):
        pytest.skip("job submission here does not sign a guest's job under MUNGE")
    assert got[0] == 0, (got[2], s.helper.log)
    assert got[1].strip() == str(s.guest.uid)


def test_a_guests_job_over_two_ranks_runs_as_the_guest_on_each(site: Site) -> None:
    """Every rank's launcher asks its own helper (here both ranks share one)."""
    s = site
    config = s.inst.home / "site.toml"
    with s.inst.instance(
        s.inst.home / "two-ranks", "--test-size=2", "--config", str(config)
    ) as live:
        proc = s.guest.pflux(
            "run", "-N2", "-n2", "sh", "-c", "echo $(id -u) $FLUX_TASK_RANK", PFLUX_URI=live.uri
        )
        jobid = s.guest.pflux("job", "last", PFLUX_URI=live.uri).stdout.strip()
        signed = s.guest.pflux("job", "info", jobid, "J", PFLUX_URI=live.uri).stdout
        header = signed.split(".", 1)[0]
        if (
            json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))["mechanism"]
            != "munge"
        ):
            pytest.skip("job submission here does not sign a guest's job under MUNGE")
        assert proc.returncode == 0, (proc.stderr, s.helper.log)
        assert sorted(proc.stdout.split("\n")[:2]) == [f"{s.guest.uid} 0", f"{s.guest.uid} 1"]


def test_a_guests_next_job_runs_in_the_shell_its_last_ran_in(site: Site) -> None:
    """A guest's shell done with a job takes the guest's next one, which it checks as
    the helper would, as its user: the helper is asked once, and no fork is paid."""
    s = site
    runs = [s.ok(s.guest, "run", "sh", "-c", "echo $PPID $(id -u)").split() for _ in range(3)]
    assert {uid for _, uid in runs} == {str(s.guest.uid)}
    shells = {ppid for ppid, _ in runs}  # a task's parent is its shell
    assert len(shells) == 1, runs


@pytest.mark.skipif(shutil.which("chrt") is None, reason="no chrt (util-linux) here")
@UNDER_OTHER
def test_a_guests_shell_gives_way_and_its_tasks_run_as_usual(site: Site) -> None:
    """Run as the guest, the shell still takes SCHED_BATCH and starts its task under
    SCHED_OTHER (a change of policy the guest may make)."""
    s = site
    policy = "chrt -p {} | head -n1 | cut -d: -f2"
    script = f"echo $({policy.format('$$')}) $({policy.format('$PPID')})"
    rc, out, err = s.pflux(s.guest, "run", "sh", "-c", script)
    if not s.signed_under_munge(s.ok(s.guest, "job", "last").strip()):
        pytest.skip("job submission here does not sign a guest's job under MUNGE")
    assert rc == 0, (err, s.helper.log)
    assert out.split() == ["SCHED_OTHER", "SCHED_BATCH"]


def test_a_guests_request_changed_after_signing_fails_and_runs_nothing(site: Site) -> None:
    """job-ingest takes J well formed in the guest's name; the guest's shell (here, as
    the guest has one) or the helper proves the signature before anything runs."""
    s = site
    made = s.guest.home / "changed-request-ran"
    signed = s.ok(s.guest, "submit", "--dry-run", "true")
    changed = s.ok(s.guest, "submit", "--dry-run", "touch", str(made))
    proc = s.guest.code(CHANGED_AFTER_SIGNING, s.live.uri, signed, changed)
    assert proc.returncode == 0, proc.stderr
    jobid = proc.stdout.strip()
    s.ok(s.guest, "job", "wait-event", "-t", "120", jobid, "clean")
    eventlog = s.ok(s.guest, "job", "eventlog", jobid)
    assert "SHA256 hash mismatch" in eventlog, (eventlog, s.helper.log)
    assert "start" not in [line.split()[1] for line in eventlog.splitlines()], eventlog
    assert not made.exists()


def test_a_guest_reads_its_own_jobs_logs_and_not_the_owners(site: Site) -> None:
    s = site
    mine = s.ok(s.guest, "submit", "echo", "guest-said").strip()
    s.ok(s.guest, "job", "wait-event", "-t", "120", mine, "clean")
    assert "shell.start" in s.ok(s.guest, "job", "eventlog", "-p", "exec", mine)
    assert "guest-said" in s.ok(s.guest, "job", "eventlog", "-p", "output", mine)
    theirs = s.ok(s.inst, "submit", "echo", "owner-said").strip()
    s.ok(s.inst, "job", "wait-event", "-t", "120", theirs, "clean")
    rc, out, err = s.pflux(s.guest, "job", "eventlog", "-p", "output", theirs)
    assert rc != 0
    assert "owner-said" not in out
    assert "not your job" in err or "ermission" in err, err


def launcher_of(state: Path) -> int:
    """The pid of the job shell launcher of the instance whose state directory is
    ``state`` (its journal, an argument, is there)."""
    with os.scandir("/proc") as entries:
        for entry in entries:
            try:
                cmdline = Path(entry.path, "cmdline").read_bytes()
            except OSError:
                continue
            if b"pflux.shell.launcher" in cmdline and os.fsencode(state) in cmdline:
                return int(entry.name)
    raise AssertionError("no job shell launcher")


def test_a_guests_job_outlives_its_launcher_and_completes_once_with_its_output(
    site: Site,
) -> None:
    """The guest's shell reaches job-exec on its job's own socket: the launcher's death
    (SIGKILL) costs it only its next job; job-exec starts another launcher."""
    s = site
    release = s.guest.home / "release"
    os.mkfifo(release, 0o600)
    os.chown(release, s.guest.uid, s.guest.gid)
    runs = s.guest.home / "runs"
    script = f"echo ran >> {runs}; echo before; read word < {release}; echo after $word; id -u"
    jobid = s.ok(s.guest, "submit", "sh", "-c", script).strip()
    s.ok(s.guest, "job", "wait-event", "-t", "120", "-p", "exec", jobid, "shell.start")
    launcher = launcher_of(s.inst.home / "site-state")
    os.kill(launcher, signal.SIGKILL)
    wait_exit([launcher])
    writer = os.open(release, os.O_RDWR)  # never blocks; the task reads its line when it opens
    try:
        os.write(writer, b"released\n")
        s.ok(s.guest, "job", "wait-event", "-t", "120", jobid, "clean")
    finally:
        os.close(writer)
    rc, _, err = s.pflux(s.guest, "job", "status", jobid)
    assert rc == 0, (err, s.ok(s.guest, "job", "eventlog", jobid), s.helper.log)
    output = s.ok(s.guest, "job", "attach", jobid)
    assert output == f"before\nafter released\n{s.guest.uid}\n", output
    assert runs.read_text() == "ran\n"  # once
    assert s.ok(s.guest, "run", "id", "-u").strip() == str(s.guest.uid)  # a new launcher runs it


def test_a_guests_job_gets_its_stdin_and_its_signals_on_its_own_socket(site: Site) -> None:
    """What job-exec sends a running guest's shell (INPUT, KILL) goes on the job's own
    socket, not through the launcher."""
    s = site
    command = f"echo hello | {s.guest.python} {PFLUX} run cat"
    piped = s.guest.run(["sh", "-c", command], PFLUX_URI=s.live.uri)
    assert piped.returncode == 0, (piped.stderr, s.helper.log)
    assert piped.stdout == "hello\n"
    jobid = s.ok(s.guest, "submit", "sleep", "300").strip()
    s.ok(s.guest, "job", "wait-event", "-t", "120", "-p", "exec", jobid, "shell.start")
    s.ok(s.guest, "cancel", jobid)
    s.ok(s.guest, "job", "wait-event", "-t", "120", jobid, "clean")
    events = s.ok(s.guest, "job", "eventlog", jobid)
    assert 'type="cancel"' in events, events
    assert f"status={(128 + signal.SIGTERM) << 8}" in events, events  # SIGTERM killed it


class Restart:
    """A guest's job that waits on a FIFO in an instance of the site's own, killed (SIGKILL)
    with or without its launcher, and restarted on its state directory."""

    def __init__(self, s: Site, name: str, config: str = "") -> None:
        self.s = s
        self.state = s.inst.home / f"{name}-state"
        self.config = s.inst.home / f"{name}.toml"
        self.config.write_text((s.inst.home / "site.toml").read_text() + config)
        self.config.chmod(0o644)
        self.release = s.guest.home / f"{name}-release"
        os.mkfifo(self.release, 0o600)
        os.chown(self.release, s.guest.uid, s.guest.gid)
        self.runs = s.guest.home / f"{name}-runs"
        self.shell = s.guest.home / f"{name}-shell"
        os.mkfifo(self.shell, 0o600)
        os.chown(self.shell, s.guest.uid, s.guest.gid)

    def instance(self) -> LiveInstance:
        return self.s.inst.instance(self.state, "--config", str(self.config))

    def pflux(self, live: LiveInstance, *args: str) -> subprocess.CompletedProcess[str]:
        return self.s.guest.pflux(*args, PFLUX_URI=live.uri)

    def crash(self, *, launcher: bool) -> tuple[str, int]:
        """Start the instance, submit the job, kill the broker (and its launcher) once the
        job's task runs; the job's id and its shell's pid."""
        script = (
            f"echo ran >> {self.runs}; echo $PPID > {self.shell}; echo before; "
            f"read word < {self.release}; echo after $word; id -u"
        )
        first = self.instance()
        try:
            jobid = self.pflux(first, "submit", "sh", "-c", script).stdout.strip()
            assert jobid, self.s.helper.log
            shell = int(read_fifo(self.shell, 120))
            started = self.pflux(first, "job", "wait-event", "-t", "120", jobid, "start")
            assert started.returncode == 0, (started.stderr, self.s.helper.log)
            if launcher:
                pid = launcher_of(self.state)
                first.proc.send_signal(signal.SIGSTOP)  # it cannot start another launcher first
                os.kill(pid, signal.SIGKILL)
                wait_exit([pid])
        finally:
            first.kill()
        return jobid, shell

    def events(self, live: LiveInstance, jobid: str) -> list[str]:
        log = self.pflux(live, "job", "eventlog", jobid).stdout
        return [line.split()[1] for line in log.splitlines() if line.strip()]


@pytest.mark.parametrize("launcher", [True, False], ids=["with-its-launcher", "alone"])
def test_a_guests_job_outlives_the_broker_and_completes_once(site: Site, launcher: bool) -> None:
    """The broker killed (SIGKILL), alone or with its launcher, while a guest's job waits:
    its shell keeps its tasks and its records, meets the restarted instance's job-exec at
    its rendezvous, and the job ends with its status and all its output, run once, as
    the guest."""
    job = Restart(site, "survive-launcher" if launcher else "survive-broker")
    jobid, _ = job.crash(launcher=launcher)
    with job.instance() as second:
        writer = os.open(job.release, os.O_RDWR)  # never blocks; the task reads when it opens
        try:
            os.write(writer, b"released\n")
            done = job.pflux(second, "job", "wait-event", "-t", "120", jobid, "clean")
            assert done.returncode == 0, (done.stderr, site.helper.log)
        finally:
            os.close(writer)
        status = job.pflux(second, "job", "status", jobid)
        events = job.events(second, jobid)
        assert status.returncode == 0, (status.stderr, events, second.log.read_text())
        assert events.count("start") == 1, events
        output = job.pflux(second, "job", "attach", jobid).stdout
        assert output == f"before\nafter released\n{site.guest.uid}\n", output
    assert job.runs.read_text() == "ran\n"  # once


def test_a_guests_shell_no_instance_takes_in_time_kills_its_tasks_and_its_job_fails(
    site: Site,
) -> None:
    """With nobody to meet within ``rejoin-timeout``, the shell kills its tasks and exits;
    the restarted instance ends the job with an exception and never starts it again."""
    job = Restart(site, "give-up", 'rejoin-timeout = "1s"\n')  # in [exec], the site's last
    jobid, shell = job.crash(launcher=True)
    wait_exit([shell], 60)  # it gave up
    with job.instance() as second:
        done = job.pflux(second, "job", "wait-event", "-t", "120", jobid, "clean")
        assert done.returncode == 0, (done.stderr, site.helper.log)
        status = job.pflux(second, "job", "status", jobid)
        assert status.returncode != 0
        log = job.pflux(second, "job", "eventlog", jobid).stdout
        assert "exception" in job.events(second, jobid), log
        assert "not found when the instance restarted" in log, log
        assert job.events(second, jobid).count("start") == 1, log
    assert job.runs.read_text() == "ran\n"  # never again


def test_an_instance_stopped_for_good_ends_a_guests_running_job(site: Site) -> None:
    """A clean stop (QUIT) is no crash: the guest's shell waits for no later instance, its
    tasks are ended and it exits with the instance."""
    job = Restart(site, "stopped")
    first = job.instance()
    try:
        script = f"echo $PPID > {job.shell}; read word < {job.release}"
        jobid = job.pflux(first, "submit", "sh", "-c", script).stdout.strip()
        assert jobid, site.helper.log
        shell = int(read_fifo(job.shell, 120))
        assert first.stop() == 0
    finally:
        if first.proc.poll() is None:
            first.kill()
    wait_exit([shell], 30)
