"""A restart that takes inactive jobs from job-list's cache lists what a full replay lists.

job-list keeps a cache of inactive jobs (``job-list.sqlite`` in the state
directory); at restart it takes the jobs the journal's digest confirms and asks
for the histories of the others. Whatever state the cache is in (as written,
deleted, damaged, out of date, or missing a job that ended just before a
SIGKILL), ``pflux jobs -a`` must answer exactly what a job-list that replayed
every job from the journal answers.
"""

from __future__ import annotations

import errno
import os
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from pflux.api import Client
from pflux.errors import RPCError
from pflux.joblist import snapshot
from pflux.joblist.cache import CACHE_NAME
from pflux.joblist.snapshot import SNAPSHOT_NAME
from pflux.protocol.manager import held_sum
from pflux.spec.eventlog import parse
from support.instance import LiveInstance, jobspec, ok

HELD = "the journal's inactive jobs are those of the cache"


@pytest.fixture(autouse=True)
def module_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    """job-list's INFO lines (what it took from the cache) go to the instance's log."""
    monkeypatch.setenv("PFLUX_MODULE_LOGLEVEL", "INFO")


def listing(state: Path) -> tuple[Any, str]:
    """Restart on ``state``: every job as job-list lists it, `pflux jobs -a --json`'s
    output, and what job-list logged."""
    log = state.parent / f"{state.name}.log"
    start = log.stat().st_size if log.exists() else 0
    with LiveInstance(state, cores=2) as live:
        with Client(live.uri) as client:
            jobs = [j.to_dict() for j in client.list_jobs(max_entries=0)]
        shown = ok(live.uri, "jobs", "-a", "--json")
        assert live.stop() == 0
    with log.open() as f:
        f.seek(start)
        return (jobs, shown), f.read()


def copy(state: Path, name: str) -> Path:
    target = state.parent / name
    # sockets a SIGKILL left behind cannot be copied; a restart makes new ones
    shutil.copytree(state, target, ignore=shutil.ignore_patterns("local", "sock"))
    return target


def variety(client: Client) -> None:
    """Jobs that end every way job-list reports differently; one stays held."""
    client.wait(client.submit(jobspec()))
    failed = client.submit(jobspec(wait_status=256))
    client.wait(failed)
    busy = [client.submit(jobspec("0")) for _ in range(2)]  # both cores, until canceled
    for jobid in busy:
        client.wait_event(jobid, "start")
    waiting = client.submit(jobspec())  # pending behind them, annotated by the scheduler
    client.wait_event(waiting, "priority")
    client.handle.call("job-manager.memo", {"id": int(busy[0]), "memo": {"note": "kept"}})
    after = jobspec()  # its dependency fails when busy[0] is canceled
    after["attributes"]["system"]["dependencies"] = [{"scheme": "afterok", "value": str(busy[0])}]
    after_id = client.submit(after)
    client.wait_event(after_id, "dependency-add")
    client.cancel(waiting, "not today")
    for jobid in busy:
        client.cancel(jobid)
    client.wait(after_id)
    urgent = client.submit(jobspec(), urgency=31)
    client.wait(urgent)
    held = client.submit(jobspec(), urgency="hold")
    client.wait_event(held, "priority")
    for jobid in [waiting, *busy]:
        client.wait(jobid)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    """A state directory whose cache holds its inactive jobs, and the listing a
    restart without the cache gives."""
    state = tmp_path_factory.mktemp("restart-cache") / "state"
    with LiveInstance(state, cores=2) as live, Client(live.uri) as client:
        variety(client)
        assert live.stop() == 0
    assert rows(state) == 7  # every inactive job, written when job-list stopped
    assert (state / SNAPSHOT_NAME).exists()  # and the snapshot
    replayed = copy(state, "replayed")
    (replayed / CACHE_NAME).unlink()
    (replayed / SNAPSHOT_NAME).unlink()
    expected, log = listing(replayed)
    assert "inactive jobs from the snapshot" not in log
    assert rows(replayed) == 7  # rebuilt from the journal
    return state, expected


def rows(state: Path) -> int:
    with sqlite3.connect(state / CACHE_NAME) as conn:
        count: int = conn.execute("SELECT count(*) FROM job").fetchone()[0]
    conn.close()
    return count


@pytest.mark.parametrize("source", ["snapshot", "cache"])
def test_a_restart_from_the_cache_lists_what_a_replay_lists(
    reference: tuple[Path, Any], source: str
) -> None:
    state, expected = reference
    target = copy(state, f"cached-{source}")
    if source == "cache":
        (target / SNAPSHOT_NAME).unlink()
    jobs, log = listing(target)
    assert jobs == expected
    assert f"job-list: 7 inactive jobs from the {source}" in log
    assert "asking for" not in log  # nothing replayed again
    assert HELD in log  # and no digest sent


def damage_rows(path: Path) -> None:
    """Lose a row, miscount one, and flip a digit in another."""
    with sqlite3.connect(path) as conn:
        ids = [row[0] for row in conn.execute("SELECT id FROM job ORDER BY id")]
        conn.execute("DELETE FROM job WHERE id = ?", (ids[0],))
        conn.execute("UPDATE job SET nevents = nevents - 1 WHERE id = ?", (ids[1],))
        record = conn.execute("SELECT record FROM job WHERE id = ?", (ids[2],)).fetchone()[0]
        conn.execute(
            "UPDATE job SET record = ? WHERE id = ?", (record.replace(b"0", b"1", 1), ids[2])
        )
    conn.close()


@pytest.mark.parametrize("damage", ["garbage", "truncated", "format", "rows", "deleted"])
def test_a_damaged_cache_changes_nothing_listed(reference: tuple[Path, Any], damage: str) -> None:
    state, expected = reference
    target = copy(state, f"damaged-{damage}")
    cache = target / CACHE_NAME
    if damage == "garbage":
        cache.write_bytes(os.urandom(20_000))
    elif damage == "truncated":
        cache.write_bytes(cache.read_bytes()[:6000])
    elif damage == "format":
        with sqlite3.connect(cache) as conn:
            conn.execute("PRAGMA user_version = 99")
        conn.close()
    elif damage == "rows":
        damage_rows(cache)
    else:
        cache.unlink()
    jobs, log = listing(target)
    assert jobs == expected
    assert rows(target) == 7  # the cache is whole again
    if damage == "rows":
        assert "asking for 3 inactive jobs the cache lacks" in log  # 1 lost, 2 invalid
        assert HELD not in log
        jobs, log = listing(target)
        assert jobs == expected
        assert "asking for" not in log
        assert HELD in log


@pytest.mark.parametrize("damage", ["garbage", "truncated", "flipped", "torn write", "stale"])
def test_a_snapshot_not_current_or_damaged_is_not_used(
    reference: tuple[Path, Any], damage: str, tmp_path: Path
) -> None:
    """Whatever the snapshot holds, the listing is a replay's; only a current, whole one
    is read ("stale": a snapshot of an earlier cache, beside a cache written since)."""
    state, expected = reference
    target = copy(state, f"snapshot-{damage}")
    path = target / SNAPSHOT_NAME
    data = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(os.urandom(len(data)))
    elif damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "flipped":
        path.write_bytes(data[:100] + bytes([data[100] ^ 1]) + data[101:])
    elif damage == "torn write":  # a stop killed while writing: the old file stays
        path.unlink()
        Path(f"{path}.new").write_bytes(data[:200])
    else:
        earlier = snapshot.decode(data)
        cache = target / CACHE_NAME
        with sqlite3.connect(cache) as conn:  # what a later run writes, stamped
            conn.execute("DELETE FROM job WHERE id = (SELECT max(id) FROM job)")
        conn.close()
        stamp = f"done\n{cache.stat().st_size} {cache.stat().st_mtime_ns}\n".encode()
        (target / f"{CACHE_NAME}.state").write_bytes(stamp)
        assert earlier.stamp != stamp
    jobs, log = listing(target)
    assert jobs == expected
    assert "inactive jobs from the snapshot" not in log
    if damage == "stale":
        assert "is not current; reading the cache" in log
    elif damage != "torn write":
        assert f"{SNAPSHOT_NAME}: ignored: " in log
    jobs, log = listing(target)  # the stop wrote a current one
    assert jobs == expected
    assert "job-list: 7 inactive jobs from the snapshot" in log


def test_a_snapshot_the_journal_does_not_confirm_is_corrected(
    reference: tuple[Path, Any],
) -> None:
    """A current snapshot whose jobs are not the journal's (one missing, one counted
    otherwise) is corrected as a cache is: the digest, then those histories."""
    state, expected = reference
    target = copy(state, "snapshot-wrong")
    path = target / SNAPSHOT_NAME
    frozen = snapshot.Frozen(snapshot.decode(path.read_bytes()), lambda i, n: None)
    frozen.confirm_all()
    kept = list(frozen.rows())
    first = kept[0]
    wrong = [(first[0], first[1] + 1, *first[2:]), *kept[2:]]
    path.write_bytes(snapshot.encode(frozen.stamp, wrong))
    jobs, log = listing(target)
    assert jobs == expected
    assert "job-list: 6 inactive jobs from the snapshot" in log
    assert HELD not in log
    assert "asking for 2 inactive jobs the cache lacks" in log


def module_pid(state: Path) -> int:
    """The job-list process of the instance on ``state``."""
    found = subprocess.run(
        ["pgrep", "-f", f"pflux.broker.module .* pflux.joblist:JobList {state.absolute()}$"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.split()
    assert len(found) == 1, found
    return int(found[0])


def wait_exit(pid: int) -> None:
    """Wait for a process that is not our child to exit."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        ready, _, _ = select.select([fd], [], [], 30)
        assert ready, f"process {pid} did not exit"
    finally:
        os.close(fd)


def test_a_job_that_ended_just_before_sigkill(tmp_path: Path) -> None:
    state = tmp_path / "state"
    live = LiveInstance(state, cores=2)
    with Client(live.uri) as client:
        first = [client.submit(jobspec()) for _ in range(3)]
        for jobid in first:
            client.wait(jobid)
        last = client.submit(jobspec(wait_status=512))
        client.wait(last)  # inactive and told to job-list; its row may not be written yet
        pid = module_pid(state)
    live.kill()
    wait_exit(pid)  # job-list ends when its link to the broker does
    replayed = copy(state, "replayed")
    (replayed / CACHE_NAME).unlink()
    expected, _ = listing(replayed)
    found, _ = listing(state)
    assert found == expected
    jobs, _ = found
    assert [job["id"] for job in jobs] == [last, *reversed(first)]
    assert jobs[0]["waitstatus"] == 512


@pytest.mark.parametrize("killed", ["job-list", "job-list and the broker"])
def test_a_crash_after_a_start_from_the_snapshot(reference: tuple[Path, Any], killed: str) -> None:
    """Jobs end and one is purged after a start from the snapshot, then SIGKILL: the
    restart lists what a replay of every job lists (`pflux jobs -a`'s ids, states and
    results too)."""
    state, _ = reference
    target = copy(state, f"crash-{killed.replace(' ', '-')}")
    live = LiveInstance(target, cores=2)
    with Client(live.uri) as client:
        ended = [client.submit(jobspec(wait_status=256 * i)) for i in range(3)]
        for jobid in ended:
            client.wait(jobid)
        oldest = client.list_jobs(max_entries=0)[-1].id
        assert "purged 1" in ok(live.uri, "job", "purge", "--force", str(oldest)).lower()
        shown = ok(live.uri, "jobs", "-a", "-o", "{id},{state},{result}")
        pid = module_pid(target)
    os.kill(pid, signal.SIGKILL)  # first, so that it cannot close its cache
    wait_exit(pid)
    if killed == "job-list":
        with Client(live.uri) as client:
            assert len(until_served(client)) == 10  # started again, from the rows
        assert live.stop() == 0
    else:
        live.kill()
    log = (target.parent / f"{target.name}.log").read_text()
    assert log.count("job-list: 7 inactive jobs from the snapshot") == 1
    replayed = copy(target, f"crash-{killed.replace(' ', '-')}-replayed")
    (replayed / CACHE_NAME).unlink()
    (replayed / SNAPSHOT_NAME).unlink()
    expected, _ = listing(replayed)
    found, _ = listing(target)
    assert found == expected
    assert len(found[0]) == 8 + 3 - 1
    with LiveInstance(target, cores=2) as live:
        assert ok(live.uri, "jobs", "-a", "-o", "{id},{state},{result}") == shown
        assert live.stop() == 0


def test_the_journal_digest_and_history(reference: tuple[Path, Any]) -> None:
    state, expected = reference
    jobs = expected[0]
    inactive = [job["id"] for job in jobs if job["state"] == 64]
    held = next(job["id"] for job in jobs if job["state"] != 64)
    with LiveInstance(copy(state, "journal"), cores=2) as live, Client(live.uri) as client:
        logs = {jobid: parse(client.lookup(jobid, ["eventlog"])["eventlog"]) for jobid in inactive}
        digest, entries = backlog(client, {"full": True, "digest": True})
        pairs = sorted([jobid, len(log)] for jobid, log in logs.items())
        assert sorted(digest) == pairs
        assert {entry["id"] for entry in entries} == {held}  # only the active job in full
        # a subscriber holding exactly these jobs gets no digest; one count off, all of it
        same = [len(pairs), held_sum((jobid, count) for jobid, count in pairs)]
        for held_, sent in [(same, True), ([same[0], same[1] ^ 1], pairs), ([6, same[1]], pairs)]:
            request = {"full": True, "digest": True, "held": held_}
            digest, entries = backlog(client, request)
            assert (digest if digest is True else sorted(digest)) == sent
            assert {entry["id"] for entry in entries} == {held}
        history = client.handle.call("job-manager.journal-history", {"ids": [inactive[0], 12345]})
        sent = history["events"]
        assert [entry["entry"] for entry in sent] == [e.to_json() for e in logs[inactive[0]]]
        assert [entry["seq"] for entry in sent] == list(range(len(sent)))
        assert isinstance(sent[0]["jobspec"], dict)
        for bad, errnum, rule in [
            ({"ids": "1"}, errno.EPROTO, "ids: expected array, got str"),
            ({"ids": [-1]}, errno.EINVAL, "ids[0]: expected int >= 0"),
            ({"ids": [1] * 1001}, errno.EINVAL, "ids: expected array of length <= 1000"),
            ({}, errno.EPROTO, "ids: required"),
        ]:
            with pytest.raises(RPCError) as info:
                client.handle.call("job-manager.journal-history", bad)
            assert info.value.errnum == errnum
            assert info.value.errstr == f"job-manager.journal-history: {rule}"
        bad_digest = client.handle.rpc("job-manager.events-journal", {"digest": 1}, streaming=True)
        with pytest.raises(RPCError) as info:
            bad_digest.get(timeout=30)
        assert info.value.errnum == errno.EPROTO
        assert info.value.errstr == "job-manager.events-journal: digest: expected bool, got int"
        assert live.stop() == 0


def backlog(client: Client, request: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    """A ``full`` subscription's backlog: the digest's pairs (True if it answered ``held``
    instead) and the entries, up to the sentinel."""
    stream = client.handle.rpc("job-manager.events-journal", request, streaming=True)
    digest: Any = []
    entries: list[dict[str, Any]] = []
    while True:
        payload = stream.get(timeout=30)
        if payload.get("held") is True:
            assert digest == []
            digest = True
        elif "digest" in payload:
            digest += payload["digest"]
        entries += payload.get("events", [])
        if payload.get("sentinel"):
            return digest, entries


def until_served(client: Client) -> list[dict[str, Any]]:
    """Every job, once job-list serves again (no event tells a client a service is back)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            return [j.to_dict() for j in client.list_jobs(max_entries=0)]
        except RPCError as exc:
            if exc.errnum != errno.ENOSYS or time.monotonic() > deadline:
                raise
        time.sleep(0.05)


def test_a_job_list_process_killed_comes_back_with_the_same_list(
    reference: tuple[Path, Any],
) -> None:
    """The instance starts job-list again; it loads its cache while the job manager runs."""
    state, expected = reference
    target = copy(state, "respawn")
    with LiveInstance(target, cores=2) as live, Client(live.uri) as client:
        before = [j.to_dict() for j in client.list_jobs(max_entries=0)]
        assert before == expected[0]
        pid = module_pid(target)
        os.kill(pid, signal.SIGKILL)
        wait_exit(pid)
        assert until_served(client) == before
        assert module_pid(target) != pid
        assert live.stop() == 0
    log = (target.parent / f"{target.name}.log").read_text()
    assert log.count("job-list: 7 inactive jobs from the snapshot") == 1  # as stopped
    assert log.count("job-list: 7 inactive jobs from the cache") == 1  # its killed process's


def test_a_second_instance_on_the_directory_leaves_the_first_alone(
    reference: tuple[Path, Any],
) -> None:
    """Its job-list starts before its KVS finds the directory in use: it must not touch
    the cache, and the instance must not touch the socket."""
    state, expected = reference
    target = copy(state, "twice")
    with LiveInstance(target, cores=2) as live, Client(live.uri) as client:
        second = subprocess.run(
            [sys.executable, "-m", "pflux.cli", "start", "--state-dir", str(target), "true"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert second.returncode != 0
        assert "in use by another process" in second.stderr
        module_pid(target)  # the second's job-list is gone, and was not started again
        assert [j.to_dict() for j in client.list_jobs(max_entries=0)] == expected[0]
        assert live.stop() == 0
    assert rows(target) == 7
    jobs, log = listing(target)
    assert jobs == expected
    assert "job-list: 7 inactive jobs from the snapshot" in log
