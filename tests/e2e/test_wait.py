"""``pflux job wait`` and waitable jobs end to end, as ``flux job wait``.

A job submitted waitable (``--flags=waitable``, ``waitable=True``) keeps its
result until one wait takes it; other jobs cannot be waited for. Jobs run in
test mode; one that must still be running when a wait starts runs until it
is canceled.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pflux.api import Client
from pflux.errors import RPCError
from pflux.spec.fluid import JobID
from support.instance import LiveInstance, fails, jobspec, ok, pflux, quiesce

NONE_LEFT = "pflux-job: ERROR: there are no more waitable jobs\n"
UNKNOWN = "pflux-job: ERROR: invalid job id, or job may be inactive and not waitable\n"


@pytest.fixture(autouse=True)
def _no_zombies(uri: str, client: Client) -> Iterator[None]:
    """Each test starts and ends with no waitable job left to wait for."""
    quiesce(client)
    pflux(uri, "job", "wait", "--all")
    yield
    quiesce(client)
    pflux(uri, "job", "wait", "--all")


def submit(uri: str, tmp_path: Path, *options: str, **test: str | int) -> JobID:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(jobspec(**test)))  # type: ignore[arg-type]
    return JobID.parse(ok(uri, "job", "submit", *options, str(path)))


def test_a_waitable_jobs_result_is_taken_once(uri: str, client: Client, tmp_path: Path) -> None:
    good = submit(uri, tmp_path, "--flags=waitable")
    client.wait(good)  # pflux's wait leaves the result to take
    assert pflux(uri, "job", "wait", str(good)).returncode == 0
    assert fails(uri, "job", "wait", str(good), rc=2) == UNKNOWN
    bad = submit(uri, tmp_path, "--flags=waitable", wait_status=256)
    assert fails(uri, "job", "wait", str(bad)) == (
        "pflux-job: ERROR: task(s) exited with exit code 1\n"
    )


def test_jobs_not_submitted_waitable_cannot_be_waited_for(
    uri: str, client: Client, tmp_path: Path
) -> None:
    running = client.submit(jobspec("0"))  # runs until canceled
    client.wait_event(running, "start")
    assert fails(uri, "job", "wait", str(running), rc=2) == (
        "pflux-job: ERROR: job was not submitted with FLUX_JOB_WAITABLE\n"
    )
    client.cancel(running)
    client.wait(running)
    assert fails(uri, "job", "wait", str(running), rc=2) == UNKNOWN
    assert fails(uri, "job", "wait", rc=2) == NONE_LEFT  # its result is nobody's zombie


def test_wait_without_id_takes_the_next_and_blocks_while_jobs_run(uri: str, client: Client) -> None:
    assert fails(uri, "job", "wait", rc=2) == NONE_LEFT
    done = client.submit(jobspec(), waitable=True)
    client.wait(done)
    assert JobID.parse(ok(uri, "job", "wait")) == done
    # a waitable job still running: the wait blocks until it ends
    running = client.submit(jobspec("0"), waitable=True)
    client.wait_event(running, "start")
    with Client(uri) as other:
        rpc = other.handle.rpc("job-manager.wait", {"id": 2**64 - 1}, wait=True)
        client.cancel(running)
        assert rpc.get()["id"] == running
    assert fails(uri, "job", "wait", rc=2) == NONE_LEFT


def test_wait_all_reports_failures_and_exits_1(uri: str, client: Client) -> None:
    assert pflux(uri, "job", "wait", "--all").returncode == 0
    good = client.submit(jobspec(), waitable=True)
    bad = client.submit(jobspec(wait_status=512), waitable=True)
    plain = client.submit(jobspec(wait_status=512))
    client.wait_all([good, bad, plain])
    proc = pflux(uri, "job", "wait", "--all", "-v")
    assert proc.returncode == 1
    assert set(proc.stderr.splitlines()) == {
        f"{good.f58}: job completed successfully",
        f"{bad.f58}: task(s) exited with exit code 2",
    }
    client.wait(client.submit(jobspec(), waitable=True))
    quiet = pflux(uri, "job", "wait", "--all")
    assert (quiet.returncode, quiet.stderr) == (0, "")


def test_the_python_api_reaps_waitable_jobs(client: Client) -> None:
    jobid = client.submit(jobspec(wait_status=256), waitable=True)
    result = client.reap()
    assert (result.id, result.success) == (jobid, False)
    assert result.errstr == "task(s) exited with exit code 1"
    with pytest.raises(RPCError, match="there are no more waitable jobs"):
        client.reap()
    with pytest.raises(RPCError, match="invalid job id"):
        client.reap(jobid)


def test_unwaited_results_survive_a_restart(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with LiveInstance(state) as live, Client(live.uri) as client:
        kept = client.submit(jobspec(), waitable=True)
        taken = client.submit(jobspec(), waitable=True)
        client.wait_all([kept, taken])
        assert client.reap(taken).success
        assert live.stop() == 0
    with LiveInstance(state) as live:
        # as in flux-core, a restart finds every inactive waitable job a zombie:
        # taking a result is not recorded
        proc = pflux(live.uri, "job", "wait", "--all", "-v")
        assert proc.returncode == 0
        assert set(proc.stderr.splitlines()) == {
            f"{jobid.f58}: job completed successfully" for jobid in (kept, taken)
        }
        assert fails(live.uri, "job", "wait", rc=2) == NONE_LEFT
