"""Signals ignored by whoever started the instance (``trap '' INT``, nohup's SIGHUP) are
not ignored in what it runs: ``pflux exec``'s commands and the prolog start with every
signal at its default action, as job tasks do."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path

from pflux.api import Client, jobspec_of
from support.instance import LiveInstance, pflux

IGNORED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGRTMIN + 6)
# the instance's starter: these signals ignored, then pflux start
STARTER = (
    sys.executable,
    "-c",
    "import os, signal, sys\n"
    f"for sig in {[int(s) for s in IGNORED]}: signal.signal(sig, signal.SIG_IGN)\n"
    "os.execv(sys.argv[1], sys.argv[1:])",
)
NONE_IGNORED = "SigIgn:\t0000000000000000\n"


def test_commands_the_instance_runs_have_no_signal_ignored(tmp_path: Path) -> None:
    prolog = tmp_path / "prolog"
    config = tmp_path / "config.toml"
    command = ["sh", "-c", f"grep SigIgn /proc/self/status > {prolog}"]
    config.write_text(f"[job-manager.prolog]\ncommand = {json.dumps(command)}\n")
    with LiveInstance(tmp_path / "state", "--config", str(config), prefix=STARTER) as live:
        ran = pflux(live.uri, "exec", "-n", "-r", "0", "grep", "SigIgn", "/proc/self/status")
        assert ran.stdout == NONE_IGNORED, ran.stderr
        # a shell sent SIGINT ends by it, rather than going on
        ran = pflux(live.uri, "exec", "-n", "-r", "0", "sh", "-c", "kill -INT $$; echo survived")
        assert "survived" not in ran.stdout
        assert ran.returncode == 128 + signal.SIGINT, ran.stderr
        with Client(live.uri) as client:
            jobid = client.submit(jobspec_of(["true"]))
            assert client.wait(jobid).success
        assert prolog.read_text() == NONE_IGNORED
