"""Retention alone: the limits read from the configuration, and which inactive jobs are
due, oldest first, found at the front of the order rather than by a scan."""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path
from typing import Any

import pytest

from pflux.broker.config import ConfigError
from pflux.broker.router import Broker, LocalRoute
from pflux.kvs.service import KVSService
from pflux.manager.job import Ended
from pflux.manager.purge import AUTO_BATCH, Retention, limits
from pflux.manager.service import JobManager
from pflux.protocol.message import REQUEST, ROLE_USER, Message
from pflux.spec.record import JobRecord


def ended(jobid: int, t_inactive: float) -> Ended:
    record = JobRecord(jobid)
    record.t_inactive = t_inactive
    return Ended.from_job(record)


def table(**keys: Any) -> dict[str, Any]:
    return {"job-manager": {key.replace("_", "-"): value for key, value in keys.items()}}


def test_limits_are_read_and_bad_ones_named() -> None:
    assert limits({}) == (None, None)
    assert limits(table(inactive_age_limit="7d", inactive_num_limit=0)) == (7 * 86400.0, 0)
    assert limits(table(inactive_age_limit="inf")) == (None, None)
    bad = [
        (table(inactive_num_limit=-1), "[job-manager] inactive-num-limit: must be an integer >= 0"),
        (table(inactive_num_limit=True), "inactive-num-limit: must be an integer >= 0, got True"),
        (table(inactive_age_limit=5), "inactive-age-limit: must be a Flux standard duration"),
        (table(inactive_age_limit="-1s"), "inactive-age-limit: invalid Flux standard duration"),
        ({"job-manager": 3}, "[job-manager]: must be a table"),
    ]
    for config, message in bad:
        with pytest.raises(ConfigError) as info:
            limits(config)
        assert message in str(info.value)


def retention(jobs: list[Ended], config: dict[str, Any], purged: list[list[int]]) -> Retention:
    loop = asyncio.new_event_loop()
    done = Retention(loop, {}, lambda js: purged.append([j.id for j in js]), config)
    done.rebuilt({job.id: job for job in jobs})
    loop.close()
    return done


def test_the_oldest_by_end_are_taken_first_and_a_job_purged_by_id_is_skipped() -> None:
    jobs = [ended(1, 30.0), ended(2, 10.0), ended(3, 20.0), ended(4, 40.0)]
    kept = retention(jobs, {}, [])
    assert [job.id for job in kept.order] == [2, 3, 1, 4]
    del kept.ended[3]  # purged by id
    assert kept.count(None, 1, now=100.0) == 2
    assert kept.count(50.0, None, now=100.0) == 3  # ended before 50: 2, 1, 4 (3 is gone)

    def take(most: int) -> list[int]:
        taken = [job.id for job in kept.take(None, 1, most=most, now=100.0)]
        for jobid in taken:  # as the service does
            del kept.ended[jobid]
        return taken

    assert take(1) == [2]
    assert take(10) == [1]
    assert [job.id for job in kept.order] == [4]
    assert kept.take(None, None, most=10, now=100.0) == []


def test_a_restart_without_limits_leaves_the_order_until_asked() -> None:
    """A million inactive jobs are not sorted at a restart that has no use for them."""
    jobs = [ended(1, 30.0), ended(2, 10.0), ended(3, 20.0)]
    unread = ended(4, 0.0)
    unread.t_inactive = None  # type: ignore[assignment]  # unset: sorting it would fail
    kept = retention([*jobs, unread], {}, [])
    later = ended(5, 5.0)
    kept.ended[5] = later
    kept.add(later)
    unread.t_inactive = 40.0
    assert [job.id for job in kept.order] == [5, 2, 3, 1, 4]
    newest = ended(6, 50.0)
    kept.ended[6] = newest
    kept.add(newest)
    assert [job.id for job in kept.order] == [5, 2, 3, 1, 4, 6]


def test_the_limits_purge_a_batch_a_turn_until_within_them() -> None:
    purged: list[list[int]] = []

    async def run() -> Retention:
        loop = asyncio.get_running_loop()
        kept = Retention(
            loop, {}, lambda js: purged.append([j.id for j in js]), table(inactive_num_limit=5)
        )
        jobs = {i: ended(i, float(i)) for i in range(1, AUTO_BATCH + 11)}
        kept.rebuilt(jobs)

        def forget(js: list[Ended]) -> None:
            purged.append([j.id for j in js])
            for job in js:
                del jobs[job.id]

        kept.purge = forget
        for _ in range(3):
            await asyncio.sleep(0)
        return kept

    kept = asyncio.run(run())
    assert [len(batch) for batch in purged] == [AUTO_BATCH, 5]
    assert purged[0][0] == 1
    assert sorted(kept.ended) == list(range(AUTO_BATCH + 6, AUTO_BATCH + 11))


def test_only_the_instance_owner_may_purge(tmp_path: Path) -> None:
    async def body() -> dict[str, tuple[int, str | None]]:
        broker = Broker(os.getuid(), attrs={"state-dir": str(tmp_path)}, config={})
        for service in (KVSService(broker), JobManager(broker)):
            broker.register(service)
        await broker.start()
        try:
            replies: asyncio.Queue[Message] = asyncio.Queue()
            route = LocalRoute(broker.queue, replies.put_nowait)
            requests = {"job-manager.purge": {"force": True}, "job-manager.purge-id": {"id": 1}}
            for tag, (topic, payload) in enumerate(requests.items()):
                guest = Message(REQUEST, topic, tag, payload, userid=4242, rolemask=ROLE_USER)
                broker.dispatch(guest, route)
            got = {}
            for _ in requests:
                msg = await asyncio.wait_for(replies.get(), 10)
                got[msg.topic] = (msg.errnum, msg.errstr)
            return got
        finally:
            await broker.stop()

    assert asyncio.run(body()) == {
        topic: (errno.EPERM, f"{topic}: only the instance owner may do this")
        for topic in ("job-manager.purge", "job-manager.purge-id")
    }
