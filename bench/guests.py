"""Guests' real jobs against the owner's, through one site instance and its privileged helper.

Run as root, with MUNGE running and two local users: the instance account and a
guest (``useradd``; the tests make ``pfluxsec1`` and ``pfluxsec2``).

    python bench/guests.py -n 300 --rounds 3 --account pfluxsec1 --guest pfluxsec2

It starts the helper (``python -m pflux.imp``) as root, on the instance's Python
(a guest's shell is the helper's fork, an owner's the launcher's), then an instance as the
account with ``[exec] imp`` and ``[access] allow-guest-user``; then, alternating,
the account and the guest each submit ``-n`` real ``true`` jobs with every request
in flight (the API's ``submit_many``) and wait for them all, and it reports each
round's jobs/s, N over the time from the first submit to the last end. With
``--cores N`` the instance offers N cores (``pflux start --cores``), so N jobs run
at once: a node of many cores, where a job's start-up latency is hidden behind the
others' and the CPU each job costs sets the rate.

With ``--serial N`` each also runs N jobs one at a time, and it reports the
medians of where each job's time went, from its eventlog's timestamps:
submit to clean, alloc to the shell's start (J read, the shell given the job),
and start to finish (the tasks' run, their end reported).

With ``--cpu`` it reports, each round, the CPU time per job (user and system,
milliseconds) of each part: the client, the broker (its modules too), the
launcher, the shells (the owner's, the launcher's children, with their tasks;
a guest's, the helper's children, with theirs), the helper, and munged; read
from ``/proc`` before and after the round, a process that ended in between
counted in the parent that reaped it.
"""

from __future__ import annotations

import argparse
import os
import pwd
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROUND = """
import sys, time
from pflux.api import Client, jobspec_of
n = int(sys.argv[1])
jobspec = jobspec_of(["true"], environment={"PATH": "/usr/bin:/bin"})
with Client() as client:
    t0 = time.monotonic()
    ids = client.submit_many([jobspec] * n)
    results = client.wait_all(ids)
    took = time.monotonic() - t0
failed = sum(not r.success for r in results.values())
print(n / took, failed)
"""

SERIAL = """
import statistics, sys
from pflux.api import Client, jobspec_of
n = int(sys.argv[1])
jobspec = jobspec_of(["true"], environment={"PATH": "/usr/bin:/bin"})
spans = {"total": [], "alloc-start": [], "start-finish": []}
with Client() as client:
    for i in range(n + 1):  # the first warms the shells
        jobid = client.submit(jobspec)
        client.wait(jobid)
        at = {e.name: e.timestamp for e in client.events(jobid, follow=False)}
        if i:
            spans["total"].append(at["clean"] - at["submit"])
            spans["alloc-start"].append(at["start"] - at["alloc"])
            spans["start-finish"].append(at["finish"] - at["start"])
print(" ".join(f"{k}={statistics.median(v) * 1e3:.2f}ms" for k, v in spans.items()))
"""


# (pid, start time): its part, its children's part, its CPU time, its children's
Times = dict[tuple[int, int], tuple[str, str, int, int]]
Parts = tuple[str, str]


def cpu_times(helper: int, instance: int) -> Times:
    """Each process's CPU time, in clock ticks, with the part of the run it counts to."""
    stats: dict[int, list[str]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                text = Path(entry.path, "stat").read_text()
            except OSError:
                continue  # it has ended
            stats[int(entry.name)] = text[text.rindex(")") + 2 :].split()
    known: dict[int, Parts | None] = {}

    def parts(pid: int) -> Parts | None:
        if pid not in known:
            ppid = int(stats[pid][1]) if pid in stats else 0
            above = parts(ppid) if ppid and ppid != helper else None
            known[pid] = _parts(pid, ppid, above, helper=helper, instance=instance)
        return known[pid]

    times: Times = {}
    for pid, fields in stats.items():
        found = parts(pid)
        if found is not None:
            own, children = int(fields[11]) + int(fields[12]), int(fields[13]) + int(fields[14])
            times[pid, int(fields[19])] = (*found, own, children)
    return times


def _parts(pid: int, ppid: int, above: Parts | None, *, helper: int, instance: int) -> Parts | None:
    """The part of process ``pid`` and of its children (``above``: its parent's)."""
    if pid == helper:
        return ("helper", "guest shells")
    if pid == instance:
        return ("broker", "broker")
    if ppid == helper:
        return ("guest shells", "guest shells")
    if above == ("broker", "broker") and _launcher(pid):
        return ("launcher", "shells")
    if above is not None:
        return (above[1], above[1])
    return ("munged", "munged") if _comm(pid) == "munged" else None


def _launcher(pid: int) -> bool:
    try:
        return b"pflux.shell.launcher" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def cpu_spent(before: Times, after: Times, client: float, jobs: int) -> str:
    """Milliseconds of CPU per job of each part, between two ``cpu_times``."""
    ms = 1e3 / os.sysconf("SC_CLK_TCK") / jobs
    spent: dict[str, float] = {"client": client * 1e3 / jobs}
    for key, (own_part, children_part, own, children) in after.items():
        _, _, own0, children0 = before.get(key, ("", "", 0, 0))
        spent[own_part] = spent.get(own_part, 0.0) + (own - own0) * ms
        spent[children_part] = spent.get(children_part, 0.0) + (children - children0) * ms
    for key, (own_part, _, own, children) in before.items():
        if key not in after:  # counted, whole, in its parent's children's time
            spent[own_part] = spent.get(own_part, 0.0) - (own + children) * ms
    total = sum(spent.values())
    shown = " ".join(f"{name} {value:.2f}" for name, value in sorted(spent.items()) if value)
    return f"{total:.2f} ms/job: {shown}"


def python_for(base: Path, user: pwd.struct_passwd) -> str:
    """A Python ``user`` can run with pflux importable (this one, or a venv beside the
    system's Python of the same version that finds this one's packages)."""
    probe = [sys.executable, "-c", "import pflux.api"]
    try:
        ran = subprocess.run(probe, user=user.pw_uid, group=user.pw_gid, check=False)
    except OSError:
        ran = None
    if ran is not None and ran.returncode == 0:
        return sys.executable
    system = shutil.which(f"python{sys.version_info[0]}.{sys.version_info[1]}", path="/usr/bin")
    if system is None:
        raise SystemExit(f"{user.pw_name} cannot run {sys.executable}, and no system Python")
    env = base / "python"
    subprocess.run([system, "-m", "venv", "--without-pip", str(env)], check=True)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(env)}))
    (site / "pflux-bench.pth").write_text(
        f"import site; site.addsitedir({sysconfig.get_path('purelib')!r})\n"
    )
    return str(env / "bin" / "python")


def run_as(
    user: pwd.struct_passwd, code: str, jobs: int, *, python: str, home: Path, uri: str
) -> str:
    """What ``code`` prints, run with ``python`` as ``user`` against the instance ``uri``."""
    return subprocess.run(
        [python, "-c", code, str(jobs)],
        user=user.pw_uid, group=user.pw_gid, extra_groups=[], cwd=home,
        env={"PATH": "/usr/bin:/bin", "HOME": str(home), "PFLUX_URI": uri},
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_round(
    args: argparse.Namespace,
    name: str,
    user: pwd.struct_passwd,
    where: tuple[str, Path, str],
    processes: tuple[subprocess.Popen[bytes], subprocess.Popen[str]],
) -> float:
    """Run a round of ``user``'s jobs (``where``: Python, home and URI), say how it went
    (``--cpu``, ``--serial``), and return its jobs/s."""
    python, home, uri = where
    helper, instance = processes[0].pid, processes[1].pid
    before = cpu_times(helper, instance) if args.cpu else {}
    client = _children_cpu()
    out = run_as(user, ROUND, args.jobs, python=python, home=home, uri=uri).split()
    client = _children_cpu() - client
    rate, failed = float(out[0]), int(out[1])
    print(f"{name}: {rate:.0f} jobs/s ({failed} failed)", flush=True)
    if args.cpu:
        spent = cpu_spent(before, cpu_times(helper, instance), client, args.jobs)
        print(f"{name}, CPU: {spent}", flush=True)
    if args.serial:
        spans = run_as(user, SERIAL, args.serial, python=python, home=home, uri=uri)
        print(f"{name}, one at a time (medians): {spans}", flush=True)
    return rate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("-n", "--jobs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serial", type=int, default=0, help="jobs one at a time, a round")
    parser.add_argument(
        "--cores", type=int, default=0, help="cores the instance offers (default: the machine's)"
    )
    parser.add_argument("--cpu", action="store_true", help="CPU time per job, by part")
    parser.add_argument("--account", default="pfluxsec1", help="the instance's account")
    parser.add_argument("--guest", default="pfluxsec2", help="a user who submits as a guest")
    args = parser.parse_args()
    if os.getuid() != 0:
        raise SystemExit("run as root: the privileged helper runs as root")
    account, guest = pwd.getpwnam(args.account), pwd.getpwnam(args.guest)
    base = Path(tempfile.mkdtemp(prefix="pflux-guests-"))
    base.chmod(0o755)
    try:
        python = python_for(base, account)
        sock = base / "imp" / "sock"
        imp = base / "imp.toml"
        imp.write_text(
            f'socket = "{sock}"\nallowed-users = ["{args.account}"]\n'
            f'allowed-mechanisms = ["munge"]\nmax-ttl = 300\npython = "{python}"\n'
        )
        # the helper runs the instance's Python: a guest's shell is forked from it, and
        # is compared with the owner's, forked from the launcher, on the same interpreter
        helper = subprocess.Popen([python, "-m", "pflux.imp", "--config", str(imp)])
        home = base / "home"
        home.mkdir()
        home.chmod(0o1777)  # both users write here; sticky, as /tmp: neither removes the other's
        config = base / "site.toml"
        config.write_text(f'[access]\nallow-guest-user = true\n[exec]\nimp = "{sock}"\n')
        wait = ["sh", "-c", 'echo "$PFLUX_URI"; exec cat >/dev/null']
        cores = ["--cores", str(args.cores)] if args.cores else []
        instance = subprocess.Popen(
            [python, "-m", "pflux.cli", "start", "--config", str(config), *cores, *wait],
            user=account.pw_uid, group=account.pw_gid, extra_groups=[], cwd=home,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env={"PATH": "/usr/bin:/bin", "HOME": str(home)},
        )  # fmt: skip
        assert instance.stdout is not None
        assert instance.stdin is not None
        uri = instance.stdout.readline().strip()
        rates: dict[str, list[float]] = {"owner": [], "guest": []}
        try:
            for _ in range(args.rounds):
                for name, user in (("owner", account), ("guest", guest)):
                    where = (python, home, uri)
                    rates[name].append(one_round(args, name, user, where, (helper, instance)))
        finally:
            instance.stdin.close()
            instance.wait(60)
            helper.terminate()
            helper.wait(30)
        owner, guests = statistics.median(rates["owner"]), statistics.median(rates["guest"])
        print(f"median: owner {owner:.0f} jobs/s, guest {guests:.0f} ({guests / owner:.0%})")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
