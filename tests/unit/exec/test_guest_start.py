"""A guest's job is started with its J: its namespace and first keys with its start's
turn (a turn's guests' jobs in one commit, as the owner's), its shells asked for in that
turn with the start request's J, or once J is read where the request carried none, not
at all if the job ended meanwhile, and, started again after a restart, through the
helper, never as the instance's shell."""

from __future__ import annotations

import array
import contextlib
import functools
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from pflux.broker.router import Route
from pflux.protocol import shellwire as wire
from pflux.protocol.message import Message
from pflux.spec.fluid import JobID

JOBS = 6
TIMEOUT = 30.0


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


def test_a_guests_job_with_its_j_in_the_start_request_is_asked_for_in_that_turn(
    tmp_path: Path, live: Any
) -> None:
    """The start request's J goes to the launcher in the start's turn: no read of J from
    the KVS (the KVS's J, different here, would show in SPAWN_AS had it been read)."""
    stream_of = sys.modules[type(live).__module__].Stream
    live = type(live)(tmp_path, {"exec": {"imp": str(tmp_path / "no-helper")}})
    try:
        jobid = (4 * JOBS) << 24
        live.call("kvs.commit", {"ops": [["put", f"{JobID(jobid).kvs}.J", "KVS-J"]]})
        turns: list[list[str]] = [[]]  # what each turn dispatched, and sent the launcher
        dispatch = live.broker.dispatch
        send_launcher = live.exec.send_launcher

        def capture(msg: Message, route: Route) -> None:
            turns[-1].append(msg.topic)
            dispatch(msg, route)

        def spy(rank: int, data: bytes) -> None:
            for kind, _, payload in wire.split(data)[0]:
                if kind == wire.SPAWN_AS:
                    turns[-1].append(payload.split(b"\n")[1].decode())
            send_launcher(rank, data)

        live.broker.dispatch = capture  # type: ignore[method-assign]
        live.exec.send_launcher = spy
        stream = stream_of(jobid)

        def start() -> None:
            body = {**_guests_start(live, jobid), "J": "START-J"}
            live.broker.send("job-exec.start", body, stream.put, streaming=True)
            live.broker.queue.at_end(lambda: turns.append([]))  # the start's turn ends

        live.loop.call_soon_threadsafe(start)
        stream.all()  # no helper: it ends with an exception
        assert "kvs.get" not in [topic for turn in turns for topic in turn]
        started = next(turn for turn in turns if "job-exec.start" in turn)
        assert "START-J" in started, turns
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
            body = _guests_start(live, jobid)
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


def test_a_guests_job_started_again_after_a_restart_runs_as_its_user(
    tmp_path: Path, live: Any
) -> None:
    """A job in RUN when job-exec started, of which nothing ran, starts again: a guest's
    through the helper, with its J (SPAWN_AS), never as a shell of the instance's."""
    stream_of = sys.modules[type(live).__module__].Stream
    live = type(live)(tmp_path, {"exec": {"imp": str(tmp_path / "no-helper")}})
    try:
        jobid = (3 * JOBS) << 24
        live.call("kvs.commit", {"ops": [["put", f"{JobID(jobid).kvs}.J", "J"]]})
        asked: list[bytes] = []
        send_launcher = live.exec.send_launcher

        def spy(rank: int, data: bytes) -> None:
            asked.extend(kind for kind, _, _ in wire.split(data)[0])
            send_launcher(rank, data)

        live.exec.send_launcher = spy
        live.exec.maybe_ran.add(jobid)  # as a restarted job-exec's survey finds it
        stream = stream_of(jobid)
        body = _guests_start(live, jobid)
        send = functools.partial(live.broker.send, streaming=True)
        live.loop.call_soon_threadsafe(send, "job-exec.start", body, stream.put)
        stream.all()  # no helper: it ends with an exception
        assert wire.SPAWN not in asked
        assert wire.SPAWN_AS in asked
    finally:
        live.close()


def _guests_start(live: Any, jobid: int) -> dict[str, Any]:
    """A ``job-exec.start`` of a guest's (another uid's) job ``true``."""
    return {
        "id": jobid,
        "userid": os.getuid() + 1,
        "jobspec": live.job(["true"]),
        "reattach": False,
        "R": live.make_R(),
    }


def test_a_guests_job_the_helper_refuses_ends_with_its_reason_and_leaves_no_socket(
    tmp_path: Path, live: Any
) -> None:
    """job-exec makes a guest's job's records socket as it asks for the job: one the helper
    refuses ends with the helper's reason (the launcher's word comes before the socket's
    end), and job-exec's end of the socket is closed, job after job."""
    stream_of = sys.modules[type(live).__module__].Stream
    imp = tmp_path / "imp"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(str(imp))
    listener.listen(8)

    def refuse() -> None:  # a stand-in helper: takes each request, closes its sockets, refuses
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                data, ancillary, _, _ = conn.recvmsg(1 << 16, socket.CMSG_SPACE(8))
                for _, _, fds in ancillary:
                    for fd in array.array("i", fds):
                        os.close(fd)
                _, jobid, rank, _ = wire.HEADER.unpack_from(data)
                key = wire.shell_key(jobid, rank)
                conn.send(wire.record(wire.EXCEPTION, key, b"J does not verify"))

    helper = threading.Thread(target=refuse, daemon=True)
    helper.start()
    live = type(live)(tmp_path, {"exec": {"imp": str(imp)}})
    try:

        def refused(jobid: int) -> list[str]:
            live.call("kvs.commit", {"ops": [["put", f"{JobID(jobid).kvs}.J", "J"]]})
            stream = stream_of(jobid)
            send = functools.partial(live.broker.send, streaming=True)
            body = _guests_start(live, jobid)
            live.loop.call_soon_threadsafe(send, "job-exec.start", body, stream.put)
            got = stream.all()
            return [data["note"] for kind, data in got if kind == "exception"]

        def sockets() -> int:
            """This process's open sockets, once job-exec holds no guest's socket."""
            deadline = time.monotonic() + TIMEOUT
            while live.exec.launcher.guest_keys and time.monotonic() < deadline:
                time.sleep(0.01)  # a socket's end may be read after the job's release
            assert not live.exec.launcher.guest_keys
            found = 0
            for fd in os.scandir("/proc/self/fd"):
                with contextlib.suppress(FileNotFoundError):  # closed meanwhile
                    found += os.readlink(fd.path).startswith("socket:")
            return found

        assert refused((4 * JOBS) << 24) == ["privileged helper: J does not verify"]
        before = sockets()
        for n in range(1, 6):
            assert refused((4 * JOBS + n) << 24) == ["privileged helper: J does not verify"]
        assert sockets() == before
    finally:
        live.close()
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        helper.join(10)
