"""A restart takes inactive jobs from their records, not their eventlogs, and knows what a
replay of every eventlog knows, whenever a kill -9 came.

The job manager stores an inactive job's record (``pflux.manager.inactive``) in
the commit of its ``clean`` event, so the KVS never holds one without the
other. After a kill -9 in the middle of jobs ending, and after a clean stop,
every cleaned job has its record, saying what its eventlog says, and nothing
else has one; the job manager's results, history, zombies and count of
inactive jobs are those the eventlogs give; and a state directory without
records (as an older pflux left it) is replayed and given them.

A clean stop also leaves every inactive job in one snapshot
(``pflux.manager.snapshot``), which a start takes in place of the records
while nothing was committed after it: a kill -9 as it is stored, or once it
is, or after a start that committed more, restarts to the same jobs; a stale
or damaged snapshot is not taken.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import threading
from pathlib import Path

import pytest

from pflux.api import Client
from pflux.errors import RPCError
from pflux.manager import checkpoint, inactive, snapshot
from pflux.manager.job import Ended, Job
from pflux.manager.wait import ANY, result_of
from pflux.spec.kvs_keys import job_id_from_key
from pflux.spec.replay import events_of, rebuild
from pflux.spec.states import FLAG_WAITABLE, State
from support.instance import LiveInstance, jobspec

INFO = "-Slog-stderr-level=6"  # the job manager's restart line, in the instance's log
REPLAYED = re.compile(r"restart: (\d+) jobs, (\d+) active, (\d+) eventlogs replayed")
FROM = re.compile(r"eventlogs replayed; inactive jobs from (their records|the snapshot)")


def stored(client: Client) -> tuple[dict[int, Job], dict[int, str]]:
    """Every job the KVS holds, replayed from its eventlog, and every record."""
    jobs: dict[int, Job] = {}
    records: dict[int, str] = {}
    for key, value in client.kvs_walk("job"):
        jobid = job_id_from_key(key, "eventlog")
        if jobid is not None:
            job = rebuild(Job(jobid), events_of(jobid, value))
            assert job is not None, key
            jobs[jobid] = job
        elif (jobid := inactive.jobid_of(key)) is not None:
            records[jobid] = value
    return jobs, records


def check(client: Client) -> dict[int, Job]:
    """The records, and what the job manager answers, agree with the eventlogs."""
    jobs, records = stored(client)
    ended = {jobid: job for jobid, job in jobs.items() if job.state is State.INACTIVE}
    assert set(records) == set(ended)  # a record exactly where there is a clean event
    for jobid, job in ended.items():
        record, waitable = inactive.decode(jobid, records[jobid])
        assert inactive.encode(record, 0) == inactive.encode(Ended.from_job(job), 0)
        assert waitable == bool(job.flags & FLAG_WAITABLE)
        answer = client.handle.call("job-manager.result", {"id": jobid})
        expected = result_of(jobid, job)
        assert (answer["success"], answer["errstr"]) == (expected.success, expected.errstr)
    history = client.handle.call("job-manager.history.get", {"slice": "[:]"})["jobs"]
    assert history == sorted(jobs, reverse=True)
    counted = client.handle.call("job-manager.purge", {"num_limit": 0})
    assert counted == {"count": len(ended), "inactive": len(ended)}
    return ended


def restarted(state: Path) -> tuple[int, int, int]:
    """The last restart's log line: jobs, active ones, eventlogs replayed."""
    found = REPLAYED.findall((state.parent / f"{state.name}.log").read_text())
    assert found, "no restart line in the log"
    total, active, replayed = found[-1]
    return int(total), int(active), int(replayed)


def variety(client: Client) -> None:
    """Jobs that end every way, two waitable, one left held."""
    waitable = [client.submit(jobspec(), waitable=True) for _ in range(2)]
    client.wait(client.submit(jobspec(wait_status=256)))
    canceled = client.submit(jobspec(), urgency="hold")
    client.cancel(canceled, "not today")
    client.wait(canceled)
    for jobid in waitable:
        client.wait(jobid)
    client.submit(jobspec(), urgency="hold")


def stored_variety(state: Path) -> dict[int, Job]:
    """``variety``'s jobs in an instance on ``state``, stopped cleanly; what ``check`` saw."""
    with LiveInstance(state, INFO, cores=2) as live:
        with Client(live.uri) as client:
            variety(client)
            ended = check(client)
        assert live.stop() == 0
    return ended


def test_a_restart_reads_the_records_and_an_old_directory_gets_them(tmp_path: Path) -> None:
    state = tmp_path / "state"
    ended = stored_variety(state)
    for _ in range(2):  # the second restart finds what the first stored
        with LiveInstance(state, INFO, cores=2) as live:
            with Client(live.uri) as client:
                assert check(client).keys() == ended.keys()
            assert live.stop() == 0
        assert restarted(state) == (len(ended) + 1, 1, 1)  # the held job alone was replayed
    with LiveInstance(state, INFO, cores=2) as live:
        with Client(live.uri) as client:
            zombies = [client.handle.call("job-manager.wait", {"id": ANY}) for _ in range(2)]
            assert all(zombie["success"] for zombie in zombies)
            # as an older pflux left it: no records, no mark
            for jobid in ended:
                client.kvs_commit([["unlink", inactive.key(jobid), None]])
            client.kvs_commit(checkpoint.ops([], 0, 0))
        live.kill()
    with LiveInstance(state, INFO, cores=2) as live:
        with Client(live.uri) as client:
            assert check(client).keys() == ended.keys()
            zombies = [client.handle.call("job-manager.wait", {"id": ANY}) for _ in range(2)]
            assert all(zombie["success"] for zombie in zombies)
        assert live.stop() == 0
    assert restarted(state) == (len(ended) + 1, 1, len(ended) + 1)
    # the records that restart stored, and the mark past them, are read back
    with LiveInstance(state, INFO, cores=2) as live:
        with Client(live.uri) as client:
            assert check(client).keys() == ended.keys()
        assert live.stop() == 0
    assert restarted(state) == (len(ended) + 1, 1, 1)


def submit_until(uri: str, stop: threading.Event) -> None:
    """Submit short test-mode jobs, some waitable, until the instance is killed."""
    with contextlib.suppress(RPCError, OSError, EOFError), Client(uri) as client:
        while not stop.is_set():
            client.submit_many([jobspec("0.001s")] * 20)
            client.submit(jobspec("0.001s"), waitable=True)


def test_a_kill_while_jobs_end_leaves_a_record_exactly_where_a_clean_event_is(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    rng = random.Random(34)
    for _ in range(3):
        with LiveInstance(state, INFO, cores=4) as live:
            with Client(live.uri) as client:
                client.handle.call("job-manager.drain", {})  # the jobs the kill left, ended
                check(client)
                client.wait(client.submit(jobspec("0.001s")))
            stop = threading.Event()
            feeder = threading.Thread(target=submit_until, args=(live.uri, stop))
            feeder.start()
            stop.wait(rng.uniform(0.2, 0.8))  # a crash comes at a random moment
            live.kill()
            stop.set()
            feeder.join(timeout=60)
            assert not feeder.is_alive()
    with LiveInstance(state, INFO, cores=4) as live:
        with Client(live.uri) as client:
            client.handle.call("job-manager.drain", {})
            assert check(client)
        assert live.stop() == 0


def taken_from(state: Path) -> str:
    """Where the last restart took the inactive jobs from."""
    found = FROM.findall((state.parent / f"{state.name}.log").read_text())
    assert found, "no restart line in the log"
    return str(found[-1])


def zombies_again(client: Client) -> None:
    """The two waitable jobs of ``variety``, zombies again after a restart."""
    zombies = [client.handle.call("job-manager.wait", {"id": ANY}) for _ in range(2)]
    assert all(zombie["success"] for zombie in zombies)


def test_a_start_takes_the_snapshot_until_anything_is_committed_after_it(tmp_path: Path) -> None:
    state = tmp_path / "state"
    ended = stored_variety(state)
    with LiveInstance(state, INFO, cores=2) as live:
        with Client(live.uri) as client:
            assert check(client).keys() == ended.keys()
            zombies_again(client)
            purged = sorted(ended)[2]  # not waitable; committed after the snapshot, which
            # is stale from now on
            client.handle.call("job-manager.purge-id", {"id": purged, "force": True})
        live.kill()
    assert taken_from(state) == "the snapshot"
    with LiveInstance(state, INFO, cores=2) as live:
        with Client(live.uri) as client:
            assert check(client).keys() == ended.keys() - {purged}
            zombies_again(client)
        assert live.stop() == 0
    assert taken_from(state) == "their records"
    assert restarted(state) == (len(ended), 1, 1)
    with LiveInstance(state, INFO, cores=2) as live:  # the stop stored it again
        with Client(live.uri) as client:
            assert check(client).keys() == ended.keys() - {purged}
            zombies_again(client)
        live.kill()
    assert taken_from(state) == "the snapshot"


@pytest.mark.parametrize(
    ("point", "source"), [("writing", "their records"), ("written", "the snapshot")]
)
def test_a_kill_as_the_snapshot_is_stored_restarts_to_the_same_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, point: str, source: str
) -> None:
    state = tmp_path / "state"
    monkeypatch.setenv(snapshot.KILL_AT, point)
    with LiveInstance(state, INFO, cores=2) as live:
        with Client(live.uri) as client:
            variety(client)
            ended = check(client)
        assert live.stop() == -signal.SIGKILL  # killed in the middle of its stop
        with contextlib.suppress(ProcessLookupError):
            os.killpg(live.proc.pid, signal.SIGKILL)
    monkeypatch.delenv(snapshot.KILL_AT)
    with LiveInstance(state, INFO, cores=2) as live:
        with Client(live.uri) as client:
            assert check(client).keys() == ended.keys()
            zombies_again(client)
        live.kill()
    assert taken_from(state) == source
    assert restarted(state) == (len(ended) + 1, 1, 1)


def test_a_damaged_snapshot_is_logged_and_the_records_read(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with LiveInstance(state, INFO, cores=2) as live:
        with Client(live.uri) as client:
            variety(client)
            ended = check(client)
            client.kvs_commit([["put", snapshot.KEY, '{"version": 1, "rootseq": 1}']])
        live.kill()
    with LiveInstance(state, INFO, cores=2) as live:
        with Client(live.uri) as client:
            assert check(client).keys() == ended.keys()
        live.kill()
    assert taken_from(state) == "their records"
    log = live.log.read_text()
    assert (
        f"restart: {snapshot.KEY}: rootseq and count must be integers; reading the records" in log
    )
