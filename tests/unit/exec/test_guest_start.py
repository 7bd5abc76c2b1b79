"""A guest's job starts once its J is read: a turn's guests' jobs together (J's reads
are answered in one turn of the KVS, and the jobs go on in those answers' turn, so
their namespaces' first keys go in one commit, as the owner's jobs' of a turn do), and
not at all if the job ended while J was read."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Any

from pflux.broker.router import Route
from pflux.protocol.message import Message
from pflux.spec.fluid import JobID

JOBS = 6


def test_a_turns_guests_jobs_write_their_first_keys_in_one_commit(
    tmp_path: Path, live: Any
) -> None:
    stream_of = sys.modules[type(live).__module__].Stream  # the conftest's, not importable
    live = type(live)(tmp_path, {"exec": {"imp": str(tmp_path / "no-helper")}})
    try:
        ids = [(JOBS + i) << 24 for i in range(JOBS)]
        live.call("kvs.commit", {"ops": [["put", f"{JobID(i).kvs}.J", "J"] for i in ids]})
        commits: list[Any] = []
        dispatch = live.broker.dispatch

        def capture(msg: Message, route: Route) -> None:
            if msg.topic == "kvs.commit":
                commits.append(msg.payload.ops)
            dispatch(msg, route)

        live.broker.dispatch = capture  # type: ignore[method-assign]
        streams = [stream_of(jobid) for jobid in ids]

        def start_all() -> None:  # in one turn, as the job manager's of a burst come
            send = functools.partial(live.broker.send, streaming=True)
            for stream in streams:
                body = {
                    "id": stream.id,
                    "userid": os.getuid() + 1,
                    "jobspec": live.job(["true"]),
                    "reattach": False,
                    "R": live.make_R(),
                }
                send("job-exec.start", body, stream.put)

        live.loop.call_soon_threadsafe(start_all)
        for stream in streams:  # no helper: each ends with a fatal exception
            stream.all()
        first = [["put", f"{JobID(i).kvs}.guest.exec.eventlog"] for i in ids]
        holding = [n for n, ops in enumerate(commits) if any(op[:2] in first for op in ops)]
        assert len(holding) == 1, f"first keys in commits {holding} of {len(commits)}"
    finally:
        live.close()


def test_a_guests_job_ended_while_its_j_is_read_is_not_started(tmp_path: Path, live: Any) -> None:
    stream_of = sys.modules[type(live).__module__].Stream
    live = type(live)(tmp_path, {"exec": {"imp": str(tmp_path / "no-helper")}})
    try:
        jobid = (2 * JOBS) << 24
        live.call("kvs.commit", {"ops": [["put", f"{JobID(jobid).kvs}.J", "J"]]})
        stream = stream_of(jobid)

        def start_then_cancel() -> None:  # the exception comes before J's answer
            body = {
                "id": jobid,
                "userid": os.getuid() + 1,
                "jobspec": live.job(["true"]),
                "reattach": False,
                "R": live.make_R(),
            }
            live.broker.send("job-exec.start", body, stream.put, streaming=True)
            exception = {"id": jobid, "type": "cancel", "severity": 0}
            live.broker.send("job-exec.exception", exception)

        live.loop.call_soon_threadsafe(start_then_cancel)
        assert stream.kinds() == ["release"]

        async def settled() -> list[str]:
            """The namespaces, asked once J's answer was handled (turns enough for a job
            started then to have created its own)."""
            for _ in range(5):
                listed = await live.broker.call("kvs.namespace-list", {})
            return [namespace["name"] for namespace in listed["namespaces"]]

        assert f"job-{jobid}" not in live.run(settled())
        assert not live.exec.jobs
    finally:
        live.close()
