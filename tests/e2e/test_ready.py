"""An instance answers its first request only once every service it runs is there.

job-list runs in a process of its own and registers its service once its cache
is loaded; a client that connects the moment the socket appears must still get
its listing, never "no service provides 'job-list.list'".
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from pflux.api import Client
from pflux.protocol.uri import uri_for
from support.instance import PFLUX, LiveInstance, jobspec, pflux

NJOBS = 50
RESTARTS = 5


def first_listing(state: Path) -> subprocess.CompletedProcess[str]:
    """Start an instance on ``state`` and run `pflux jobs -a` the moment it can connect."""
    uri = uri_for(str(state / "local"))
    proc = subprocess.Popen(
        [str(PFLUX), "start", "--state-dir", str(state), "--cores", "4"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:  # the socket's appearance is no event this process can await
            result = pflux(uri, "jobs", "-a", "-n", "-o", "{id}")
            if "cannot connect" not in result.stderr or time.monotonic() > deadline:
                return result
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def test_first_request_after_restart_finds_every_service(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with LiveInstance(state) as live:
        with Client(live.uri) as client:
            client.submit_many([jobspec("0.001s")] * NJOBS)
            client.drain()
        assert live.stop() == 0
    for _ in range(RESTARTS):
        result = first_listing(state)
        assert (result.returncode, result.stderr) == (0, "")
        assert len(result.stdout.split()) == NJOBS
