"""The crash test's engine: kill -9 an instance at random moments under a mixed load, then check.

An instance with a state directory runs a steady mix of real jobs (each records
its own runs in a file), ``afterok`` chains, held jobs released later, cancels
and test-mode jobs, submitted by a client thread. The main thread SIGKILLs the
instance after a seeded random delay, in one of ``KINDS`` of kill: the broker
alone; the broker with its helper processes (job-list's process and the job
shell launcher); the broker and the launcher together; the launcher, then the
broker once it is gone. It restarts the instance on the same state directory,
again and again. After the last
restart it releases what is held, waits until no job is active, and checks:
every acknowledged job is there and ended once, every eventlog parses and
replays through RFC 21's table with nothing after ``clean``, no job ran twice,
a successful job ran exactly once, and a dependent started only after its
antecedent succeeded. A submission that the kill cut off before its id came
back may or may not exist; it is checked if it does. Jobs that failed because a
kill cost them their shell (``LOSS_NOTES``) are counted, the running ones (those
with a ``start`` event) apart: the aim for them is none.

``python -m support.crash --kills N --seed S`` (``scripts/crash``) is the long run.
"""

from __future__ import annotations

import argparse
import collections
import errno
import os
import random
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pflux.api import Client, jobspec_of
from pflux.errors import EventlogError, NoInstanceError, RPCError
from pflux.exec.takeover import DIED_NOTE, LOST_NOTE, UNSTARTED_NOTE
from pflux.manager.job import Job
from pflux.protocol import shelljournal as journal
from pflux.protocol.shellwire import LAUNCHER_DIED
from pflux.spec.eventlog import Event, parse
from pflux.spec.fluid import JobID
from pflux.spec.states import InvalidTransition, State, apply
from support.instance import LiveInstance, jobspec, wait_exit

CORES = 4
WINDOW = 8  # jobs the load lets be active (held ones aside) before it waits for the oldest
MAX_DELAY = 1.2  # seconds from an instance being ready to its kill, at most
DRAIN_TIMEOUT = 120.0
REAL, TEST = "real", "test"
# the kinds of kill, and how often each comes
BROKER, HELPERS, LAUNCHER, LAUNCHER_FIRST = "broker", "helpers", "launcher", "launcher first"
KINDS = {BROKER: 0.5, HELPERS: 0.2, LAUNCHER: 0.2, LAUNCHER_FIRST: 0.1}
LOSS_NOTES = (LAUNCHER_DIED, LOST_NOTE, DIED_NOTE, UNSTARTED_NOTE)  # a job's shell lost to a kill


class Lost(Exception):
    """The connection to the instance went away: the kill came."""


@dataclass
class Load:
    """What the client side did, and what the instance acknowledged."""

    runs: Path
    kinds: dict[JobID, str] = field(default_factory=dict)  # acknowledged ids: real or test
    chains: list[tuple[JobID, JobID]] = field(default_factory=list)  # (antecedent, dependent)
    refused: list[tuple[JobID, str]] = field(default_factory=list)  # (antecedent, why)
    held: set[JobID] = field(default_factory=set)  # submitted on hold, not yet released
    window: collections.deque[JobID] = field(default_factory=collections.deque)
    problems: list[str] = field(default_factory=list)

    def command(self, rng: random.Random) -> dict[str, Any]:
        """A real job that appends ``ID start`` and ``ID end`` to the runs file (O_APPEND)."""
        status = 1 if rng.random() < 0.15 else 0
        script = (
            f'echo "$FLUX_JOB_ID start" >> {self.runs}; sleep {rng.choice((0, 0.05, 0.2))}; '
            f'echo "$FLUX_JOB_ID end" >> {self.runs}; exit {status}'
        )
        return jobspec_of(["sh", "-c", script], environment={"PATH": os.environ["PATH"]})

    def run(self, uri: str, rng: random.Random) -> None:
        """Random operations until the instance goes away."""
        try:
            with Client(uri) as client:
                while True:
                    self.step(client, rng)
        except (Lost, NoInstanceError):  # the kill came (during the handshake: the latter)
            return
        except Exception as exc:  # a load that stops for another reason is a finding
            self.problems.append(f"load: {type(exc).__name__}: {exc}")

    def step(self, client: Client, rng: random.Random) -> None:
        """One operation, then wait for the oldest job if the window is full."""
        op = rng.choices(
            (self.submit_real, self.chain, self.hold, self.release, self.cancel, self.submit_test),
            weights=(30, 20, 10, 10, 10, 20),
        )[0]
        op(client, rng)
        while len(self.window) > WINDOW:
            jobid = self.window[0]
            _call(lambda j=jobid: client.wait_event(j, "clean"))
            self.window.popleft()

    def submit(self, client: Client, specs: list[dict[str, Any]], **opts: Any) -> list[JobID]:
        """Submit with every request in flight; record each id as it is acknowledged."""
        rpcs = [
            client.handle.rpc("job-ingest.submit", {"jobspec": spec, "flags": 0, **opts})
            for spec in specs
        ]
        ids, lost = [], False
        for spec, rpc in zip(specs, rpcs, strict=True):
            try:  # an answer that arrived before the kill is acknowledged all the same
                jobid = JobID(_call(rpc.get)["id"])
            except Lost:
                lost = True
                continue
            self.kinds[jobid] = TEST if "exec" in spec["attributes"]["system"] else REAL
            ids.append(jobid)
        if lost:
            raise Lost
        return ids

    def submit_real(self, client: Client, rng: random.Random) -> None:
        specs = [self.command(rng) for _ in range(rng.randint(1, 4))]
        self.window.extend(self.submit(client, specs, urgency=16))

    def submit_test(self, client: Client, rng: random.Random) -> None:
        specs = [jobspec(rng.choice(("0.001s", "0.1s"))) for _ in range(rng.randint(1, 8))]
        self.window.extend(self.submit(client, specs, urgency=16))

    def chain(self, client: Client, rng: random.Random) -> None:
        """Two or three real jobs, each ``afterok`` the one before."""
        [jobid] = self.submit(client, [self.command(rng)], urgency=16)
        self.window.append(jobid)
        for _ in range(rng.randint(1, 2)):
            spec = self.command(rng)
            spec["attributes"]["system"]["dependencies"] = [
                {"scheme": "afterok", "value": str(int(jobid))}
            ]
            try:
                [dependent] = self.submit(client, [spec], urgency=16)
            except RPCError as exc:  # the antecedent already failed or was canceled
                if exc.errnum != errno.EINVAL:
                    raise
                self.refused.append((jobid, str(exc)))
                return
            self.chains.append((jobid, dependent))
            self.window.append(dependent)
            jobid = dependent

    def hold(self, client: Client, rng: random.Random) -> None:
        make = self.command if rng.random() < 0.5 else lambda _: jobspec("0.01s")
        self.held.update(self.submit(client, [make(rng)], urgency=0))

    def release(self, client: Client, rng: random.Random) -> None:
        if self.held:
            jobid = rng.choice(sorted(self.held))
            _call(lambda: client.urgency(jobid, "default"), ok=(errno.EINVAL,))
            self.held.discard(jobid)
            self.window.append(jobid)

    def cancel(self, client: Client, rng: random.Random) -> None:
        """Cancel a held job or one the load has not seen end (it may have ended meanwhile)."""
        candidates = sorted(self.held) if self.held and rng.random() < 0.3 else self.window
        if candidates:
            jobid = rng.choice(candidates)
            _call(lambda: client.cancel(jobid, note="crash test"), ok=(errno.EINVAL,))
            self.held.discard(jobid)


def _call(fn: Any, ok: tuple[int, ...] = ()) -> Any:
    """``fn()``; Lost when the connection went away; None for an expected error."""
    try:
        return fn()
    except RPCError as exc:
        if exc.errnum == errno.ECONNRESET:
            raise Lost from None
        if exc.errnum in ok:
            return None
        raise


# --- killing ------------------------------------------------------------------------------


def helpers(state_dir: Path, broker: int) -> list[int]:
    """The instance's other processes: job-list's and the launcher (not the shells it forked).

    Both name the state directory on their command line; a shell is a fork of the
    launcher, so it has the same command line, and is told apart by its parent, or,
    once its launcher has died (its parent is another), by the journal naming it.
    """
    where = str(state_dir)
    shells = {entry[0] for entry in journal.live(str(state_dir / "exec" / "journal")).values()}
    found: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == broker:
            continue
        try:
            argv = Path(entry.path, "cmdline").read_bytes().decode(errors="replace").split("\0")
            ppid = int(Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # it ended meanwhile
        if int(entry.name) in shells:
            continue
        if any(arg == where or arg.startswith(where + "/") for arg in argv):
            found[int(entry.name)] = ppid
    return [pid for pid, ppid in found.items() if ppid not in found]


def is_launcher(pid: int) -> bool:
    try:
        return b"pflux.shell.launcher" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def kill(instance: LiveInstance, kind: str) -> None:
    """SIGKILL the broker, with the helper processes ``kind`` names: at the same moment,
    or (``LAUNCHER_FIRST``) the launcher, then the broker once the launcher is gone."""
    pids = helpers(instance.state_dir, instance.proc.pid) if kind != BROKER else []
    if kind in (LAUNCHER, LAUNCHER_FIRST):
        pids = [pid for pid in pids if is_launcher(pid)]
    first = pids if kind == LAUNCHER_FIRST else []
    for pid in [*first, instance.proc.pid, *pids]:
        if pid == instance.proc.pid and first:
            wait_exit(first)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
    instance.kill()
    wait_exit(pids)


# --- the run ------------------------------------------------------------------------------


@dataclass
class Summary:
    """What a run did and what it found; printed, it says how to replay it."""

    seed: int
    kills: int = 0
    kinds: collections.Counter[str] = field(default_factory=collections.Counter)
    restarts: int = 0
    acknowledged: int = 0
    checked: int = 0
    ran: int = 0
    losses: list[str] = field(default_factory=list)  # running jobs a kill cost their shell
    # jobs a kill cost their shell before they started (no task had run: see ``check``)
    unstarted: list[str] = field(default_factory=list)
    results: collections.Counter[str] = field(default_factory=collections.Counter)
    seconds: float = 0.0
    violations: list[str] = field(default_factory=list)

    @property
    def lost(self) -> int:
        return len(self.losses)

    def __str__(self) -> str:
        kinds = ", ".join(f"{self.kinds[kind]} {kind}" for kind in KINDS)
        lines = [
            f"seed {self.seed}: {self.kills} kills ({kinds}), "
            f"{self.restarts} restarts, {self.acknowledged} jobs acknowledged, "
            f"{self.checked} checked, {self.ran} ran, {self.lost} running jobs lost to a kill "
            f"({len(self.unstarted)} more before they started), "
            f"{self.seconds:.1f} s, {len(self.violations)} violations",
            "  results: " + ", ".join(f"{n} {r}" for r, n in self.results.most_common()),
            *(f"  lost: {loss}" for loss in self.losses[:20]),
            *(f"  lost before its start: {loss}" for loss in self.unstarted[:20]),
            *(f"  {v}" for v in self.violations[:50]),
        ]
        if self.violations or self.lost:
            lines.append(f"replay with: scripts/crash --kills {self.kills} --seed {self.seed}")
        return "\n".join(lines)


def crash_run(tmp: Path, seed: int, kills: int, kinds: dict[str, float] = KINDS) -> Summary:
    """``kills`` random kills of an instance under load (of ``kinds``, weighted), then the
    checks."""
    summary = Summary(seed)
    began = time.monotonic()
    load = Load(tmp / "runs")
    if crashes(tmp / "state", random.Random(seed), kills, load, summary, kinds=kinds):
        last(tmp / "state", load, summary)
    summary.violations += load.problems
    summary.acknowledged = len(load.kinds)
    summary.seconds = time.monotonic() - began
    return summary


def crashes(
    state: Path,
    rng: random.Random,
    kills: int,
    load: Load,
    summary: Summary,
    *,
    kinds: dict[str, float] = KINDS,
) -> bool:
    """Start, load and kill the instance ``kills`` times; False if that could not go on."""
    for _ in range(kills):
        instance = restart(state, summary)
        if instance is None:
            return False
        worker = threading.Thread(
            target=load.run, args=(instance.uri, random.Random(rng.random())), daemon=True
        )
        worker.start()
        # the one sleep: how long the instance runs before the crash is the random variable
        time.sleep(rng.uniform(0, MAX_DELAY))
        kind = rng.choices(list(kinds), weights=list(kinds.values()))[0]
        kill(instance, kind)
        summary.kills += 1
        summary.kinds[kind] += 1
        worker.join(60)
        if worker.is_alive():
            summary.violations.append("the client did not see the instance die")
            return False
    return True


def last(state: Path, load: Load, summary: Summary) -> None:
    """The final restart: let every job end, check, and stop cleanly with nothing left over."""
    instance = restart(state, summary)
    if instance is None:
        return
    with instance:  # stopped here even if a check raises
        with Client(instance.uri) as client:
            summary.violations += finish(client)
            summary.violations += check(client, load, summary)
        leftover = helpers(state, instance.proc.pid)
        rc = instance.stop()
    if rc != 0:
        summary.violations.append(f"the final clean stop exited {rc}")
    try:
        wait_exit(leftover)
    except AssertionError:
        summary.violations.append(f"processes left after the clean stop: {leftover}")


def restart(state: Path, summary: Summary) -> LiveInstance | None:
    """The instance started again on ``state``, or None (a violation) if it does not start."""
    try:
        instance = LiveInstance(state, cores=CORES)
    except RuntimeError as exc:
        summary.violations.append(f"restart {summary.restarts + 1} failed: {exc}")
        return None
    summary.restarts += 1
    return instance


def finish(client: Client) -> list[str]:
    """Release every held job and wait until no job is active.

    Held jobs are found in the instance, not in the load's records: a held job's
    submission that the kill cut off may still have been stored.
    """
    for job in client.list_jobs(states=int(State.PENDING), attrs=["urgency"]):
        if job.urgency == 0:
            _call(lambda j=job.id: client.urgency(j, "default"), ok=(errno.EINVAL,))
    try:
        client.drain(DRAIN_TIMEOUT)
    except RPCError as exc:
        active = [j.id for j in client.list_jobs(states=int(State.ACTIVE), attrs=["state"])]
        return [f"not drained after {DRAIN_TIMEOUT} s ({exc}); active: {active}"]
    return []


# --- the checks ---------------------------------------------------------------------------


@dataclass
class Checked:
    """One job as its eventlog says it went."""

    job: Job
    events: list[Event]

    def has(self, name: str) -> bool:
        return any(e.name == name for e in self.events)

    def time(self, name: str) -> float:
        """When the first event ``name`` was posted (infinity: never)."""
        return next((e.timestamp for e in self.events if e.name == name), float("inf"))


def check(client: Client, load: Load, summary: Summary) -> list[str]:
    """Every job acknowledged, listed or that ran: its eventlog, its runs, its chain."""
    problems: list[str] = []
    runs = records(load.runs)
    listed = {j.id: j.state for j in client.list_jobs(attrs=["state"])}
    ran = {jobid for jobid, _ in runs}
    jobs: dict[JobID, Checked] = {}
    for jobid in sorted(set(load.kinds) | set(listed) | ran):
        checked, trouble = eventlog(client, jobid)
        problems += trouble
        if checked is not None:
            jobs[jobid] = checked
        if jobid in load.kinds and listed.get(jobid) != State.INACTIVE:
            problems.append(f"{jobid}: job-list has it as {listed.get(jobid)}, not INACTIVE")
    problems += ran_once(jobs, load, runs)
    problems += chains_in_order(jobs, load, runs)
    summary.checked = len(jobs)
    summary.results.update(outcome(c.job) for c in jobs.values())
    for jobid, checked in jobs.items():
        if lost(checked.job):
            losses = summary.losses if checked.has("start") else summary.unstarted
            losses.append(f"{jobid}: {checked.job.exception}")
    summary.ran = len(ran)
    return problems


def outcome(job: Job) -> str:
    """The job's result, with the exception type that caused it."""
    return f"{job.result} ({job.exception[0]})" if job.exception else str(job.result)


def lost(job: Job) -> bool:
    """Whether the job failed because a kill cost it its shell (``LOSS_NOTES``).

    A job without a ``start`` event may have been lost before its shell started a
    task: job-exec had begun it (its guest ``exec.eventlog`` exists), and the
    restart could not tell it from a job whose shell ran and vanished (the journal
    named none of its shells), so failed it rather than run it again.
    """
    return job.exception is not None and job.exception[1].startswith(LOSS_NOTES)


def records(path: Path) -> list[tuple[JobID, str]]:
    """The runs file: (job, ``start`` or ``end``) in the order the tasks wrote them."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        jobid, what = line.split()
        out.append((JobID.parse(jobid), what))
    return out


def eventlog(client: Client, jobid: JobID) -> tuple[Checked | None, list[str]]:
    """The job's eventlog judged, or that it is lost."""
    try:
        text = client.lookup(jobid, ["eventlog"])["eventlog"]
    except RPCError as exc:
        return None, [f"{jobid}: lost ({exc})"]
    return judge(jobid, text)


def judge(jobid: JobID, text: str) -> tuple[Checked | None, list[str]]:
    """The job replayed through RFC 21's table, and what is wrong with its eventlog."""
    try:
        events = parse(text)
    except EventlogError as exc:
        return None, [f"{jobid}: the eventlog does not parse: {exc}"]
    job = Job(jobid)
    try:
        for event in events:
            apply(job, event)
    except InvalidTransition as exc:
        return None, [f"{jobid}: the eventlog does not replay: {exc}"]
    names = [e.name for e in events]
    problems = []
    if names.count("clean") != 1 or names[-1] != "clean" or job.state is not State.INACTIVE:
        problems.append(f"{jobid}: not INACTIVE exactly once: {names}")
    return Checked(job, events), problems


def ran_once(
    jobs: dict[JobID, Checked], load: Load, runs: list[tuple[JobID, str]]
) -> Iterator[str]:
    """No job ran twice; a real job that succeeded ran exactly once; a test-mode job never."""
    starts = collections.Counter(jobid for jobid, what in runs if what == "start")
    ends = collections.Counter(jobid for jobid, what in runs if what == "end")
    for jobid, count in starts.items():
        if count > 1:
            yield f"{jobid}: ran {count} times"
    for jobid, checked in jobs.items():
        kind = load.kinds.get(jobid)
        if kind == TEST and starts[jobid]:
            yield f"{jobid}: a test-mode job ran a command"
        if kind == REAL and checked.job.success and (starts[jobid], ends[jobid]) != (1, 1):
            yield f"{jobid}: succeeded, but started {starts[jobid]} and ended {ends[jobid]} times"


def chains_in_order(
    jobs: dict[JobID, Checked], load: Load, runs: list[tuple[JobID, str]]
) -> Iterator[str]:
    """A dependent started only after its antecedent ran to success.

    Its own records say so where both jobs wrote them (a dependent canceled as it
    started may be killed before its task writes one); its eventlog says so always:
    it left DEPEND after its antecedent's ``finish``.
    """
    first = {}
    for index, record in enumerate(runs):
        first.setdefault(record, index)
    for antecedent, dependent in load.chains:
        before, after = jobs.get(antecedent), jobs.get(dependent)
        if before is None or after is None:
            continue  # reported as lost or invalid
        started = (dependent, "start") in first or after.has("start")
        if not started:
            continue
        if not before.job.success:
            yield f"{dependent}: started though its antecedent {antecedent} did not succeed"
            continue
        began = first.get((dependent, "start"))
        if began is not None and first.get((antecedent, "end"), len(runs)) > began:
            yield f"{dependent}: started before its antecedent {antecedent} ended"
        if after.time("depend") < before.time("finish"):
            yield f"{dependent}: left DEPEND before its antecedent {antecedent} finished"
    for antecedent, why in load.refused:
        before = jobs.get(antecedent)
        if before is not None and before.job.success:
            yield f"{antecedent}: succeeded, yet a dependent afterok it was refused: {why}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--seed", type=int, default=None, help="default: a random one")
    parser.add_argument("--keep", action="store_true", help="keep the state directory")
    parser.add_argument(
        "--kind", choices=list(KINDS), default=None, help="only this kind of kill (default: all)"
    )
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 32)
    tmp = Path(tempfile.mkdtemp(prefix="pflux-crash-"))
    kinds = {args.kind: 1.0} if args.kind is not None else KINDS
    summary = crash_run(tmp, seed, args.kills, kinds)
    print(summary)
    if args.keep or summary.violations or summary.lost:
        print(f"state directory and runs kept in {tmp}")
    else:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if summary.violations else 0


if __name__ == "__main__":
    sys.exit(main())
