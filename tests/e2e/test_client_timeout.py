"""The client's timeout against a real instance: a wrong socket fails within it, and
what the user asked to wait for outlasts it.
"""

from __future__ import annotations

import subprocess

from pflux.api import Client
from pflux.protocol.uri import TIMEOUT_ENV
from support.instance import PFLUX, LiveInstance, console, environ, jobspec

RUN = "2.5s"  # each job outlasts the timeout well
TIMEOUT = "1"


def test_the_launchers_socket_is_no_instance(instance: LiveInstance) -> None:
    uri = f"local://{instance.state_dir.absolute()}/exec/sock"
    result = console("jobs", PFLUX_URI=uri, **{TIMEOUT_ENV: TIMEOUT})
    assert result.returncode == 1
    # the launcher hangs up on a caller that passes it no shell's socket
    assert result.stderr == f"pflux-jobs: ERROR: no pflux instance answered at {uri}: it hung up\n"


def test_waits_the_user_asked_for_outlast_the_timeout(uri: str, client: Client) -> None:
    jobid = str(client.submit(jobspec(RUN), waitable=True))
    commands = [
        ("job", "wait", jobid),
        ("job", "wait-event", jobid, "clean"),
        ("job", "eventlog", "-F", jobid),
        ("run", f"--setattr=system.exec.test.run_duration={RUN}", "true"),
    ]
    env = environ(PFLUX_URI=uri, **{TIMEOUT_ENV: TIMEOUT})
    procs = [
        subprocess.Popen([str(PFLUX), *args], env=env, stdout=subprocess.PIPE, text=True)
        for args in commands
    ]
    results = [proc.communicate(timeout=60) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0, 0], results
    assert "clean" in results[1][0]
    assert "clean" in results[2][0]
    with Client(uri, timeout=float(TIMEOUT)) as waiting:
        later = waiting.submit(jobspec(RUN))
        assert waiting.wait(later).success
