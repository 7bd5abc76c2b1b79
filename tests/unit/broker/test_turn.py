"""One batch per loop turn (``TurnBatch``): made on first use, flushed once at the turn's
end, answers after it, and a store's flush that waits for the commits the end sends."""

from __future__ import annotations

import asyncio
import os

from pflux.broker.router import Broker
from pflux.broker.turn import TurnBatch


async def _turns(broker: Broker, n: int = 4) -> None:
    """Let the broker's queue run ``n`` turns."""
    for _ in range(n):
        done = asyncio.get_running_loop().create_future()
        broker.queue.push(done.set_result, None)
        await done
    await asyncio.sleep(0)


def test_a_turns_work_is_one_batch_flushed_once_at_its_end_then_answered() -> None:
    async def scenario() -> None:
        broker = Broker(os.getuid())
        log: list[str] = []
        batch: TurnBatch[list[str]] = TurnBatch(
            broker, list, lambda items: log.append("flush " + ",".join(items))
        )

        def work(name: str) -> None:
            batch.get().append(name)
            log.append(name)

        def answer() -> None:
            batch.get().append("c")
            batch.after_flush(lambda: log.append("answer"))

        assert not batch.pending
        assert batch.peek() is None
        broker.queue.push(work, "a")
        broker.queue.push(work, "b")
        broker.queue.push(answer)
        broker.queue.push(lambda: log.append(f"pending {batch.pending}"))
        await _turns(broker)
        assert log == ["a", "b", "pending True", "flush a,b,c", "answer"]
        assert not batch.pending
        broker.queue.push(work, "d")  # the next turn: a batch of its own
        await _turns(broker)
        assert log[-2:] == ["d", "flush d"]
        batch.get().append("e")  # outside a turn: flushed now, when asked (a service stops)
        batch.flush()
        batch.flush()
        assert log[-1] == "flush e"
        assert log.count("flush e") == 1

    asyncio.run(scenario())


def test_a_stores_flush_waits_one_turn_for_what_the_turns_end_sent_it() -> None:
    """The KVS's rule for a job's end: a commit sent from the end of the turn (the job
    manager's ``finish``, on hearing job-exec) joins the flush; later ones do not."""

    async def scenario() -> None:
        broker = Broker(os.getuid())
        flushed: list[list[str]] = []
        store: TurnBatch[list[str]] = TurnBatch(broker, list, flushed.append, store=True)
        broker.add_method("kvs.commit", lambda req: store.get().append(req.payload["op"]))

        def send(op: str) -> None:
            broker.send("kvs.commit", {"op": op}, lambda msg: None)

        others: TurnBatch[list[str]] = TurnBatch(broker, list, lambda ops: send(ops[0]))

        def exec_end() -> None:  # job-exec's records, then its answer, from a turn's end
            send("records")
            broker.queue.push(manager_heard)

        def manager_heard() -> None:  # the job manager's batch, sent from its turn's end
            others.get().append("finish")
            broker.queue.at_next_end(lambda: send("too late"))

        broker.queue.push(exec_end)
        await _turns(broker, 6)
        assert flushed == [["records", "finish"], ["too late"]]
        # other requests sent from a turn's end hold nothing back
        flushed.clear()
        broker.add_method("elsewhere.x", lambda req: None)
        broker.queue.push(send, "alone")
        broker.queue.push(
            broker.at_turn_end, lambda: broker.send("elsewhere.x", {}, lambda msg: None)
        )
        await _turns(broker, 4)
        assert flushed == [["alone"]]

    asyncio.run(scenario())
