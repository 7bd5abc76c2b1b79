"""The public Python API against a live instance: job handles as futures, and
AsyncClient doing what Client does."""

from __future__ import annotations

import asyncio
import base64
import errno
import os
import select
from collections.abc import Iterator
from typing import Any

import pytest

import pflux
from support.instance import jobspec, quiesce


@pytest.fixture(autouse=True)
def _clean(client: pflux.Client) -> Iterator[None]:
    yield
    quiesce(client)


def test_a_job_handle_follows_its_job_to_its_result(client: pflux.Client) -> None:
    job = client.submit_job(jobspec("0.01s"))
    assert isinstance(job, pflux.JobHandle)
    result = job.result(timeout=60)
    assert (result.id, result.success, result.errstr) == (job.id, True, "")
    assert job.status() == pflux.State.INACTIVE
    assert job.done()
    assert [e.name for e in job.events(follow=False)][-1] == "clean"


def test_a_job_handle_cancels_its_job(client: pflux.Client) -> None:
    job = client.job(client.submit(jobspec("0")))
    assert job.wait_event("start").name == "start"
    assert job.status() in pflux.State.RUNNING
    assert not job.done()
    job.cancel("enough")
    result = job.result()
    assert not result.success
    assert "enough" in result.errstr


def test_a_result_not_there_in_time_is_an_rpc_timeout(client: pflux.Client) -> None:
    job = client.submit_job(jobspec("0"))
    with pytest.raises(pflux.RPCTimeout):
        job.result(timeout=0.05)
    job.cancel()


def test_the_async_client_does_what_the_client_does(uri: str) -> None:
    async def session() -> None:
        async with pflux.AsyncClient(uri) as client:
            ok = await client.submit_many([jobspec(), jobspec()])
            results = await client.wait_all(ok)
            assert all(r.success for r in results.values())
            assert [e.name async for e in client.events(ok[0], follow=False)][-1] == "clean"
            assert (await client.lookup(ok[0], ["jobspec"]))["jobspec"]
            assert (await client.job_info(ok[0], ["state"])).state == pflux.State.INACTIVE
            listed = await client.list_jobs(attrs=["id"])
            assert set(ok) <= {j.id for j in listed}

            held = await client.submit(jobspec(), urgency="hold")
            await client.wait_event(held, "priority")
            assert await client.urgency(held, 16) == 0
            running = await client.submit_job(jobspec("0"), waitable=True)
            await running.wait_event("start")
            await client.memo(running.id, {"tag": 1})
            assert (await client.wait_event(running.id, "memo")).context == {"tag": 1}
            with pytest.raises(pflux.RPCTimeout):
                await running.result(timeout=0.05)
            assert await client.raise_all(dry_run=True) >= 1
            await client.kill(running.id, 9)
            reaped = await client.reap(running.id)
            assert (reaped.id, reaped.success) == (running.id, False)
            assert await client.idle(timeout=60) == 0
            await client.drain(timeout=60)

            await client.queue_enable(False, "closed for a test")
            status = await client.queue_status()
            assert (status.enable, status.disable_reason) == (False, "closed for a test")
            await client.queue_enable(True)
            await client.queue_start(True)
            dag = await client.run_dag({"a": ["true"], "b": ["true"]}, [("a", "b")])
            assert [r.success for _, r in dag.values()] == [True, True]

    asyncio.run(session())


def test_the_async_client_connects_with_connect_too(uri: str) -> None:
    async def session() -> tuple[bool, pflux.State, bool]:
        client = await pflux.AsyncClient.connect(uri)
        try:
            held = client.job(await client.submit(jobspec(), urgency="hold"))
            await held.wait_event("priority")
            assert not await held.done()
            await held.cancel()
            job = client.job(await client.submit(jobspec()))
            return (await held.result()).success, await held.status(), (await job.result()).success
        finally:
            client.close()

    assert asyncio.run(session()) == (False, pflux.State.INACTIVE, True)


def test_update_last_jobs_and_alloc_query(client: pflux.Client) -> None:
    job = client.submit_job(jobspec("0"))
    job.wait_event("start")
    client.update(job.id, {"attributes.system.duration": 3600})
    assert job.wait_event("jobspec-update").context == {"attributes.system.duration": 3600}
    assert client.last_jobs()[0] == job.id
    assert client.last_jobs("[:2]")[:1] == [job.id]
    assert client.alloc_query().running >= 1
    with pytest.raises(pflux.RPCError, match="slice"):
        client.last_jobs("nonsense")
    job.cancel()


def test_the_async_update_last_jobs_and_alloc_query(uri: str) -> None:
    async def session() -> None:
        async with pflux.AsyncClient(uri) as client:
            job = await client.submit_job(jobspec("0"))
            await job.wait_event("start")
            await client.update(job.id, {"attributes.system.duration": 60})
            assert (await job.wait_event("jobspec-update")).context == {
                "attributes.system.duration": 60
            }
            assert (await client.last_jobs())[0] == job.id
            assert (await client.alloc_query()).running >= 1
            await job.cancel()

    asyncio.run(session())


def test_raise_many_and_kill_many_give_each_jobs_refusal(client: pflux.Client) -> None:
    killed, canceled = client.submit_job(jobspec("0")), client.submit_job(jobspec("0"))
    killed.wait_event("start")
    canceled.wait_event("start")
    unknown = pflux.JobID(1)
    kills = client.kill_many([killed.id, unknown], 9)
    assert kills[0] is None
    assert isinstance(kills[1], pflux.RPCError)
    raised = client.raise_many([canceled.id, unknown], "cancel", 0, "many")
    assert raised[0] is None
    assert isinstance(raised[1], pflux.RPCError)
    assert "many" in canceled.result().errstr
    assert not killed.result().success


def test_the_async_raise_many_and_kill_many(uri: str) -> None:
    async def session() -> tuple[list[bool], list[bool]]:
        async with pflux.AsyncClient(uri) as client:
            killed = await client.submit_job(jobspec("0"))
            canceled = await client.submit_job(jobspec("0"))
            await killed.wait_event("start")
            await canceled.wait_event("start")
            kills = await client.kill_many([killed.id, pflux.JobID(1)], 9)
            raised = await client.raise_many([canceled.id, pflux.JobID(1)], note="many")
            assert "many" in (await canceled.result()).errstr
            return [e is None for e in kills], [e is None for e in raised]

    assert asyncio.run(session()) == ([True, False], [True, False])


def test_follow_many_jobs_read_logs_and_the_instance(client: pflux.Client) -> None:
    done, later = client.submit(jobspec()), client.submit(jobspec())
    unknown = pflux.JobID(1)
    seen: dict[int, list[str]] = {0: [], 1: [], 2: []}
    for index, item in client.events_many([done, unknown, later]):
        seen[index].append(item.errstr if isinstance(item, pflux.RPCError) else item.name)
    assert seen[0][-1] == seen[2][-1] == "clean"
    assert len(seen[1]) == 1
    assert "not found" in seen[1][0]
    assert client.read_log(done) == client.lookup(done, ["eventlog"])["eventlog"]
    with pytest.raises(pflux.RPCError, match=r"eventlog path guest\.nope not found"):
        list(client.events(done, path="guest.nope", follow=False))
    running = client.submit_job(jobspec("0"))
    with pytest.raises(pflux.RPCTimeout):
        list(client.events(running.id, timeout=0.2))
    running.cancel()
    infos = client.job_info_many([done, unknown], ["state"])
    assert infos[0] == pflux.JobListing(done, state=pflux.State.INACTIVE)
    assert isinstance(infos[1], pflux.RPCError)
    assert client.attrs()["size"] == "1"
    assert set(client.resource_status()) >= {"all", "allocated"}
    entries = list(client.dmesg())
    assert entries
    assert all("message" in entry for entry in entries)


def test_the_async_client_follows_many_jobs_and_reads_the_instance(uri: str) -> None:
    async def session() -> None:
        async with pflux.AsyncClient(uri) as client:
            done = await client.submit(jobspec())
            unknown = pflux.JobID(1)
            seen: dict[int, list[str]] = {0: [], 1: []}
            async for index, item in client.events_many([done, unknown]):
                seen[index].append(item.errstr if isinstance(item, pflux.RPCError) else item.name)
            assert seen[0][-1] == "clean"
            assert len(seen[1]) == 1
            assert "not found" in seen[1][0]
            eventlog = (await client.lookup(done, ["eventlog"]))["eventlog"]
            assert await client.read_log(done) == eventlog
            with pytest.raises(pflux.RPCError, match=r"eventlog path guest\.nope not found"):
                _ = [e async for e in client.events(done, path="guest.nope", follow=False)]
            running = await client.submit_job(jobspec("0"))
            with pytest.raises(pflux.RPCTimeout):
                _ = [e async for e in client.events(running.id, timeout=0.2)]
            await running.cancel()
            infos = await client.job_info_many([done, unknown], ["state"])
            assert infos[0] == pflux.JobListing(done, state=pflux.State.INACTIVE)
            assert isinstance(infos[1], pflux.RPCError)
            assert (await client.attrs())["size"] == "1"
            assert set(await client.resource_status()) >= {"all", "allocated"}
            entries = [entry async for entry in client.dmesg()]
            assert entries
            assert all("message" in entry for entry in entries)

    asyncio.run(session())


def _names(item: pflux.Event | pflux.RPCError | None) -> str | None:
    """A followed log's item as the tests below compare it: an event's name, else what."""
    if isinstance(item, pflux.RPCError):
        return "error"
    return None if item is None else item.name


def test_submit_each_answers_each_job_and_follow_logs_says_where_each_log_ends(
    client: pflux.Client,
) -> None:
    good, refused, other = client.submit_each([jobspec(), {"version": 1}, jobspec()])
    assert isinstance(good, pflux.JobID)
    assert isinstance(other, pflux.JobID)
    assert isinstance(refused, pflux.RPCError)
    logs = [(good, "eventlog"), (pflux.JobID(1), "eventlog"), (other, "eventlog")]
    seen: dict[int, list[str | None]] = {0: [], 1: [], 2: []}
    for index, item in client.follow_logs(logs):
        seen[index].append(_names(item))
    assert seen[0][-2:] == seen[2][-2:] == ["clean", None]
    assert seen[1] == ["error"]


def test_submit_each_takes_jobspecs_a_window_at_a_time(uri: str) -> None:
    taken = []

    def jobspecs() -> Iterator[dict[str, Any]]:
        for i in range(10):
            taken.append(i)
            yield jobspec()

    with pflux.Client(uri) as client:
        answers = client.submit_each(jobspecs(), urgency="hold", window=3)
        assert taken == []  # nothing is built before the answers are asked for
        first = next(answers)
        assert len(taken) == 4  # three in flight when the fourth waits for the first
        rest = list(answers)
        assert all(isinstance(a, pflux.JobID) for a in (first, *rest))
        assert len({first, *rest}) == 10
        with pytest.raises(pflux.PfluxError, match="window: must be an integer >= 1, got 0"):
            client.submit_each([jobspec()], window=0)

    async def session() -> None:
        async with pflux.AsyncClient(uri) as client:
            async_taken = []

            def more() -> Iterator[dict[str, Any]]:
                for i in range(5):
                    async_taken.append(i)
                    yield jobspec()

            answers = client.submit_each(more(), urgency="hold", window=2)
            first = await anext(answers)
            assert isinstance(first, pflux.JobID)
            assert len(async_taken) == 3
            assert len([a async for a in answers]) == 4

    asyncio.run(session())


def test_the_async_client_submits_each_and_follows_logs(uri: str) -> None:
    async def session() -> None:
        async with pflux.AsyncClient(uri) as client:
            answers = [a async for a in client.submit_each([jobspec(), {"version": 1}])]
            good, refused = answers
            assert isinstance(good, pflux.JobID)
            assert isinstance(refused, pflux.RPCError)
            seen: dict[int, list[str | None]] = {0: [], 1: []}
            async for index, item in client.follow_logs([(good, "eventlog"), (1, "eventlog")]):
                seen[index].append(_names(item))
            assert seen[0][-2:] == ["clean", None]
            assert seen[1] == ["error"]

    asyncio.run(session())


def test_stdin_and_winsize_reach_a_running_job(client: pflux.Client) -> None:
    job = client.submit_job(["cat"])
    job.wait_event("start")
    big = b"one\n" + b"x" * 150_000 + b"\n"  # three pieces, in flight at once
    client.send_stdin(job.id, big)
    client.send_stdin(job.id, b"\xff\n", eof=True)  # not UTF-8: sent as base64
    assert job.result(timeout=60).success
    output = [e.context for e in client.events(job.id, path="guest.output", follow=False)]
    assert b"".join(_bytes(c) for c in output if c and "data" in c) == big + b"\xff\n"
    sent = [e.context for e in client.events(job.id, path="guest.input", follow=False)]
    pieces = [_bytes(c) for c in sent if c and "data" in c]
    assert [len(piece) for piece in pieces] == [65536, 65536, len(big) - 131072, 2]
    assert [bool(c.get("eof")) for c in sent if c and "data" in c] == [False] * 3 + [True]
    with pytest.raises(pflux.RPCError, match="not running") as refused:
        client.send_stdin(job.id, b"late")
    assert refused.value.errnum == errno.ENOENT
    with pytest.raises(pflux.RPCError, match="not running") as refused:
        client.send_winsize(job.id, rows=24, cols=80)
    assert refused.value.errnum == errno.ENOENT
    running = client.submit_job(["sleep", "60"])
    running.wait_event("start")
    with pytest.raises(pflux.RPCError, match="has no pty") as refused:
        client.send_winsize(running.id, rows=24, cols=80)
    assert refused.value.errnum == errno.ENOSYS
    running.cancel()


def _bytes(context: dict[str, Any]) -> bytes:
    data = context["data"]
    return base64.b64decode(data) if context.get("encoding") == "base64" else data.encode()


def test_followed_logs_are_polled_without_waiting(client: pflux.Client) -> None:
    held = client.submit(jobspec(), urgency="hold")
    follow = client.follow_logs([(held, "eventlog")])
    names: list[str | None] = []
    while "submit" not in names:  # the request went when follow_logs returned
        assert select.select([follow.fileno()], [], [], 60)[0]
        names += [_names(item) for _, item in follow.poll()]
    assert follow.poll() == []  # nothing more: it returns at once
    client.cancel(held)
    names += [_names(item) for _, item in follow]
    assert names[-2:] == ["clean", None]
    assert follow.following == 0


def test_the_async_client_sends_stdin_and_winsize(uri: str) -> None:
    async def session() -> None:
        async with pflux.AsyncClient(uri) as client:
            job = await client.submit_job(["cat"])
            await job.wait_event("start")
            await client.send_stdin(job.id, b"two\n", eof=True)
            assert (await job.result(timeout=60)).success
            assert "two" in await client.read_log(job.id, "guest.output")
            with pytest.raises(pflux.RPCError, match="not running") as refused:
                await client.send_winsize(job.id, rows=24, cols=80)
            assert refused.value.errnum == errno.ENOENT

    asyncio.run(session())


def test_the_kvs_through_the_client(client: pflux.Client) -> None:
    client.kvs_put([("apitest.a", "1"), ("apitest.b", "x")])
    client.kvs_put([("apitest.b", "y")], append=True)
    assert (client.kvs_get("apitest.a"), client.kvs_get("apitest.b")) == ("1", "xy")
    assert client.kvs_ls(".")["apitest"] == "dir"
    assert client.kvs_ls("apitest") == {"a": "val", "b": "val"}
    watch = client.kvs_watch(["apitest.a", "apitest.b"])
    seen = []
    for index, value in watch:
        seen.append((index, value))
        watch.stop(index)
    assert sorted(seen) == [(0, "1"), (1, "xy")]


def test_the_kvs_through_the_async_client(uri: str) -> None:
    async def session() -> list[tuple[int, str]]:
        async with pflux.AsyncClient(uri) as client:
            await client.kvs_put([("apitest2.a", "1")])
            await client.kvs_put([("apitest2.a", "2")], append=True)
            assert await client.kvs_get("apitest2.a") == "12"
            assert set(await client.kvs_ls("apitest2")) == {"a"}
            await client.kvs_commit([["mkdir", "apitest2.d", None]])
            await client.kvs_commit([["symlink", "apitest2.l", {"target": "apitest2.a"}]])
            assert await client.kvs_readlink("apitest2.l") == {"target": "apitest2.a"}
            assert [kv async for kv in client.kvs_walk("apitest2")] == [("apitest2.a", "12")]
            await client.kvs_namespace_create("apitest2ns", os.getuid())
            assert "apitest2ns" in [ns["name"] for ns in await client.kvs_namespaces()]
            await client.kvs_namespace_remove("apitest2ns")
            await client.kvs_dropcache()
            seen = []
            watch = client.kvs_watch(["apitest2.a"], append=True)
            async for index, value in watch:
                seen.append((index, value))
                if len(seen) == 1:
                    await client.kvs_put([("apitest2.a", "3")], append=True)
                else:
                    await watch.stop(index)
            return seen

    assert asyncio.run(session()) == [(0, "12"), (0, "3")]
