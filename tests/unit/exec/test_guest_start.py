"""A turn's guests' jobs start together: J's reads are answered in one turn of the
KVS, and the jobs go on in those answers' turn, so their namespaces' first keys go in
one commit, as the owner's jobs' of a turn do."""

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
