"""Retention: ``pflux job purge`` and ``[job-manager] inactive-*-limit`` against live instances.

A purged job is gone everywhere (the KVS, job-list, the job manager's tables),
as a job that never existed; a crash in the middle of a large purge leaves
each job whole or gone, and the listings agree with the KVS after a restart.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pflux.api import Client
from pflux.errors import RPCError
from pflux.spec.fluid import JobID
from pflux.spec.kvs_keys import job_key
from support.instance import PFLUX, LiveInstance, environ, jobspec, pflux, start_with_config

WAIT = 60.0  # seconds a purge by the limits may take on a loaded machine


def until(what: Callable[[], bool], timeout: float = WAIT) -> None:
    """Poll ``what`` (the limits purge on their own: there is no event to wait for)."""
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def listed(client: Client) -> set[int]:
    return {job.id for job in client.list_jobs(attrs=["state"])}


def in_kvs(client: Client, jobid: int) -> bool:
    try:
        client.handle.call("kvs.get", {"key": job_key(jobid, "eventlog")})
    except RPCError:
        return False
    return True


def ended(client: Client, count: int) -> list[JobID]:
    ids = client.submit_many([jobspec("0.001s")] * count)
    client.drain()
    return ids


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveInstance]:
    with LiveInstance(tmp_path / "state") as instance:
        yield instance


def test_purge_counts_without_force_and_removes_the_oldest_with_it(live: LiveInstance) -> None:
    with Client(live.uri) as client:
        ids = ended(client, 5)
        held = client.submit(jobspec("0.001s"), urgency="hold")
        out = pflux(live.uri, "job", "purge")
        assert (out.returncode, out.stdout) == (0, "use --force to purge 0 of 5 inactive jobs\n")
        out = pflux(live.uri, "job", "purge", "--num-limit=2")
        assert out.stdout == "use --force to purge 3 of 5 inactive jobs\n"
        assert len(listed(client)) == 6  # nothing purged
        out = pflux(live.uri, "job", "purge", "--num-limit=2", "--force", "--batch=1")
        assert (out.returncode, out.stdout) == (0, "purged 3 inactive jobs, 2 remaining\n")
        oldest = sorted(ids, key=int)[:3]
        assert listed(client) == {int(j) for j in ids if j not in oldest} | {int(held)}
        never = JobID(int(oldest[0]) - 1)  # an id no job ever had: before the first
        for jobid in oldest:
            assert not in_kvs(client, jobid)
            info = pflux(live.uri, "job", "info", str(jobid), "eventlog")
            unknown = pflux(live.uri, "job", "info", str(never), "eventlog")
            assert info.returncode == unknown.returncode == 1
            assert info.stderr.replace(str(jobid), "ID") == unknown.stderr.replace(str(never), "ID")
            status = pflux(live.uri, "jobs", "-a", "-n", "-o", "{id}")
            assert str(jobid) not in status.stdout
            with pytest.raises(RPCError):
                client.handle.call("job-manager.result", {"id": int(jobid)})
        last = pflux(live.uri, "job", "last", "[:]").stdout.split()
        assert not {str(j) for j in oldest} & set(last)
        # a dependency on a purged job is one on an unknown job: refused at submission
        dep = pflux(live.uri, "submit", f"--dependency=afterok:{oldest[0]}", "true")
        assert dep.returncode != 0
        assert "not found" in dep.stderr or "unknown" in dep.stderr


def test_purge_by_id_refuses_an_active_job_by_name_and_purges_nothing(
    live: LiveInstance,
) -> None:
    with Client(live.uri) as client:
        (done,) = ended(client, 1)
        held = client.submit(jobspec("0.001s"), urgency="hold")
        out = pflux(live.uri, "job", "purge", "--force", str(done), str(held))
        assert out.returncode == 1
        assert out.stderr == f"pflux-job: ERROR: purge: {held}: cannot purge active job\n"
        assert in_kvs(client, done)
        out = pflux(live.uri, "job", "purge", str(done))
        assert out.stdout == "use --force to purge 1 of 1 inactive jobs\n"
        out = pflux(live.uri, "job", "purge", "--force", str(done))
        assert (out.returncode, out.stdout) == (0, "purged 1 inactive jobs, 0 remaining\n")
        assert not in_kvs(client, done)
        out = pflux(live.uri, "job", "purge", "--force", str(done))
        assert out.stderr == f"pflux-job: ERROR: purge: {done}: id not found\n"
        out = pflux(live.uri, "job", "purge", "--num-limit=1", str(done))
        assert out.returncode == 2
        assert "--num-limit: cannot be used with job ids" in out.stderr
        out = pflux(live.uri, "job", "purge", "--batch=101")
        assert "--batch: must be 1-100, got '101'" in out.stderr


def test_limits_purge_as_jobs_end_and_a_lower_limit_at_restart(tmp_path: Path) -> None:
    config = tmp_path / "limits.toml"
    config.write_text("[job-manager]\ninactive-num-limit = 3\n")
    state = tmp_path / "state"
    with LiveInstance(state, "--config", str(config)) as live, Client(live.uri) as client:
        ids = ended(client, 10)
        newest = {int(j) for j in sorted(ids, key=int)[-3:]}
        until(lambda: listed(client) == newest)
        assert [in_kvs(client, j) for j in sorted(ids, key=int)] == [False] * 7 + [True] * 3
    config.write_text('[job-manager]\ninactive-num-limit = 1\ninactive-age-limit = "1h"\n')
    with LiveInstance(state, "--config", str(config)) as live, Client(live.uri) as client:
        until(lambda: listed(client) == {max(newest)})
    config.write_text('[job-manager]\ninactive-age-limit = "0.2s"\n')
    with LiveInstance(state, "--config", str(config)) as live, Client(live.uri) as client:
        until(lambda: not listed(client))
        ended(client, 2)
        until(lambda: not listed(client))


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("inactive-num-limit = -1", "[job-manager] inactive-num-limit: must be an integer >= 0"),
        ('inactive-num-limit = "10"', "[job-manager] inactive-num-limit: must be an integer"),
        ('inactive-age-limit = "7x"', "[job-manager] inactive-age-limit: invalid Flux standard"),
        ("inactive-age-limit = 7", "[job-manager] inactive-age-limit: must be a Flux standard"),
        ("inactive-limit = 7", "[job-manager] inactive-limit"),
    ],
)
def test_bad_limits_stop_start_up_naming_the_key(tmp_path: Path, toml: str, message: str) -> None:
    result = start_with_config(tmp_path, f"[job-manager]\n{toml}\n")
    assert result.returncode != 0
    assert message in result.stderr


def test_a_crash_in_a_large_purge_leaves_every_job_whole_or_gone(tmp_path: Path) -> None:
    state = tmp_path / "state"
    count = 3000
    first = LiveInstance(state)
    with Client(first.uri) as client:
        ids = ended(client, count)
        whole = set(client.handle.call("kvs.ls", {"key": job_key(ids[0])})["entries"])
        assert {"J", "jobspec", "eventlog", "R"} <= whole
        # 10 jobs a request, a commit each: kill -9 once 300 are gone, long before the end
        purge = subprocess.Popen(
            [str(PFLUX), "job", "purge", "--force", "--num-limit=0", "--batch=10"],
            env=environ(PFLUX_URI=first.uri),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        until(lambda: client.purge()[1] <= count - 300, timeout=WAIT)
        first.kill()
    purge.wait(timeout=WAIT)
    with LiveInstance(state) as second, Client(second.uri) as client:
        present = set()
        for jobid in ids:
            try:
                names = set(client.handle.call("kvs.ls", {"key": job_key(jobid)})["entries"])
            except RPCError:
                continue  # gone: not even its directory is left
            assert names == whole, (jobid, names)
            present.add(int(jobid))
        assert 0 < len(present) <= count - 300
        assert listed(client) == present
        assert client.purge() == (0, len(present))
        last = pflux(second.uri, "job", "last", "[:]").stdout.split()
        assert {int(JobID.parse(text)) for text in last} == present
        # and the rest purges as if nothing had happened
        assert client.purge(num_limit=0, batch=100, force=True)[0] == 100


def test_age_limit_purges_only_jobs_inactive_longer(live: LiveInstance) -> None:
    with Client(live.uri) as client:
        ids = ended(client, 3)
        out = pflux(live.uri, "job", "purge", "--age-limit=1h", "--force")
        assert (out.returncode, out.stdout) == (0, "purged 0 inactive jobs, 3 remaining\n")
        assert listed(client) == {int(j) for j in ids}
        out = pflux(live.uri, "job", "purge", "--age-limit=0", "--force")
        assert (out.returncode, out.stdout) == (0, "purged 3 inactive jobs, 0 remaining\n")
        assert not listed(client)
        out = pflux(live.uri, "job", "purge", "--age-limit=soon")
        assert out.returncode == 2
        assert "purge: --age-limit: " in out.stderr
