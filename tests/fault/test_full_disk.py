"""A full filesystem: new work is refused with ENOSPC, reads go on, and work resumes.

The state directory lives on a small tmpfs, filled with a file and then freed.
Nothing acknowledged is lost: every job whose id a submit returned is there
after a restart, and a cancel posted while the disk was full is answered once
its event is stored, not before, and not lost.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pflux.api import Client
from pflux.cli import start
from pflux.errors import RPCError
from pflux.kvs.store import Store
from pflux.spec.fluid import JobID
from support.instance import PFLUX, LiveInstance, jobspec

SIZE = "16m"
RESUME_DEADLINE = 30.0  # seconds for the KVS's pause after a full disk to pass


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of ``SIZE`` mounted in ``tmp_path``, unmounted whatever happens."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE},mode=0700", "tmpfs", str(mnt)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(path: Path) -> None:
    """Write ``path`` until the filesystem is full."""
    block = b"x" * 65536
    with path.open("wb", buffering=0) as f:
        with contextlib.suppress(OSError):
            while True:
                f.write(block)
        # the last, partial pages too
        with contextlib.suppress(OSError):
            while True:
                f.write(b"x" * 512)


def submit_until_refused(client: Client, acknowledged: set[int]) -> RPCError:
    """Submit until a submit fails (a few may fit in pages the KVS already has)."""
    for _ in range(200):
        try:
            acknowledged.add(int(client.submit(jobspec(), urgency="hold")))
        except RPCError as exc:
            return exc
    raise AssertionError("200 submits fitted on a full disk")


def test_a_full_disk_refuses_new_work_keeps_reads_and_loses_nothing(small_fs: Path) -> None:
    state = small_fs / "state"
    acknowledged: set[int] = set()
    live = LiveInstance(state, cores=1)
    try:
        with Client(live.uri) as client:
            acknowledged |= {int(client.submit(jobspec(), urgency="hold")) for _ in range(10)}
            victim = min(acknowledged)
            fill(small_fs / "filler")

            error = submit_until_refused(client, acknowledged)
            assert error.errnum == errno.ENOSPC
            assert "no space left on device" in error.errstr
            assert live.proc.poll() is None  # the instance serves on

            # reads go on
            listed = {int(job.id) for job in client.list_jobs(max_entries=0)}
            assert listed == acknowledged
            assert client.lookup(victim, ["jobspec"])

            # an event posted now waits for space: its request is answered once it is stored
            cancel = client.handle.rpc(
                "job-manager.raise", {"id": victim, "type": "cancel", "severity": 0, "note": ""}
            )
            with pytest.raises(RPCError) as refused:
                client.submit(jobspec(), urgency="hold")
            assert refused.value.errnum == errno.ENOSPC
            assert not cancel.queue  # not answered: its event is not stored
            assert "exception" not in client.lookup(victim, ["eventlog"])["eventlog"]

            (small_fs / "filler").unlink()
            acknowledged.add(int(resumed_submit(client)))
            assert cancel.get(timeout=30) == {}
            client.wait_event(victim, "clean")
        assert live.stop() == 0
    finally:
        if live.proc.poll() is None:
            live.kill()

    with LiveInstance(state, cores=1) as again, Client(again.uri) as client:
        assert {int(job.id) for job in client.list_jobs(max_entries=0)} == acknowledged
        assert client.wait_event(victim, "exception").context["type"] == "cancel"


def resumed_submit(client: Client) -> JobID:
    """A submit once the KVS writes again (it pauses a while after a full disk: poll)."""
    deadline = time.monotonic() + RESUME_DEADLINE
    while True:
        try:
            return client.submit(jobspec(), urgency="hold")
        except RPCError as exc:
            if exc.errnum != errno.ENOSPC or time.monotonic() > deadline:
                raise
        time.sleep(0.05)


def test_the_fixture_unmounts(small_fs: Path) -> None:
    assert os.path.ismount(small_fs)


def test_an_allocation_a_full_disk_refused_is_asked_for_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scheduler cannot store R once (a full disk): the job still runs, a while later."""
    apply = Store.apply
    refusals = [1]

    def full_once_for_r(self: Store, ops: Any, *args: Any, **kwargs: Any) -> Any:
        if refusals[0] and any(op[1].endswith(".R") for op in ops):
            refusals[0] -= 1
            error = sqlite3.OperationalError("database or disk is full")
            error.sqlite_errorcode = sqlite3.SQLITE_FULL  # type: ignore[attr-defined]
            raise error
        return apply(self, ops, *args, **kwargs)

    monkeypatch.setattr(Store, "apply", full_once_for_r)
    argv = ["--state-dir", str(tmp_path / "state"), "--cores", "1"]
    test_mode = "exec.test.run_duration=0.01s"
    submit = [str(PFLUX), "submit", "--wait", "-S", test_mode, "true"]
    assert start.main([*argv, "timeout", "30", *submit]) == 0
    assert refusals == [0]
