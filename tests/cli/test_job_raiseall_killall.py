"""``pflux job raiseall`` and ``pflux job killall`` against a live instance: a dry run
counts, ``-f`` acts, with flux-core's messages, options and errors."""

from __future__ import annotations

import signal

from pflux.api import Client
from support.instance import fails, held, jobspec, pflux, quiesce


def stderr_of(uri: str, *args: str) -> str:
    proc = pflux(uri, *args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ""
    return proc.stderr


def test_raiseall_counts_then_raises(uri: str, client: Client) -> None:
    quiesce(client)
    jobs = [held(client), held(client)]
    assert stderr_of(uri, "job", "raiseall", "test") == (
        "pflux-job: Command matched 2 jobs (-f to confirm)\n"
    )
    assert stderr_of(uri, "job", "raiseall", "-S", "run", "test") == (
        "pflux-job: Command matched 0 jobs\n"
    )
    assert stderr_of(uri, "job", "raiseall", "-f", "test", "a", "note") == (
        "pflux-job: Raised exception on 2 jobs (0 errors)\n"
    )
    for jobid in jobs:  # severity 7: noted, not fatal
        context = client.wait_event(jobid, "exception").context
        assert (context["type"], context["severity"], context["note"]) == ("test", 7, "a note")
    assert stderr_of(
        uri, "job", "raiseall", "-s", "0", "-S", "pending", "-u", "all", "-f", "cancel"
    ) == ("pflux-job: Raised exception on 2 jobs (0 errors)\n")
    for jobid in jobs:
        fatal = client.wait_event(jobid, "exception", match={"severity": 0})
        assert fatal.context["type"] == "cancel"
        client.wait_event(jobid, "clean")


def test_raiseall_errors(uri: str) -> None:
    assert fails(uri, "job", "raiseall", "-S", "inactive", "x") == (
        "pflux-job: ERROR: Exceptions cannot be raised on inactive jobs\n"
    )
    assert fails(uri, "job", "raiseall", "-S", "sched,nope", "x") == (
        "pflux-job: ERROR: error parsing --states: nope is unknown\n"
    )
    assert fails(uri, "job", "raiseall", "-u", "no-such-user-here", "x") == (
        "pflux-job: ERROR: unknown user no-such-user-here\n"
    )
    assert fails(uri, "job", "raiseall", "-s", "8", "x", rc=2) == (
        "pflux-job: ERROR: raiseall: --severity: must be 0-7, got '8'\n"
    )
    assert "the following arguments are required: TYPE" in fails(uri, "job", "raiseall", rc=2)


def test_killall_counts_then_signals_running_jobs(uri: str, client: Client) -> None:
    quiesce(client)
    running = [client.submit(jobspec("0")) for _ in range(2)]  # run until killed
    for jobid in running:
        client.wait_event(jobid, "start")
    pending = held(client)
    assert stderr_of(uri, "job", "killall") == "pflux-job: Command matched 2 jobs (-f to confirm)\n"
    assert stderr_of(uri, "job", "killall", "-s", "USR1", "-u", "all", "-f") == (
        f"pflux-job: {signal.strsignal(signal.SIGUSR1)} 2 jobs (0 errors)\n"
    )
    for jobid in running:  # a test-mode job ends with the signal as its status
        assert client.wait_event(jobid, "finish").context["status"] == signal.SIGUSR1
    assert stderr_of(uri, "job", "killall", "-f") == "pflux-job: Command matched 0 jobs\n"
    assert fails(uri, "job", "killall", "-s", "SIGNOPE") == (
        "pflux-job: ERROR: killall: Invalid signal SIGNOPE\n"
    )
    client.cancel(pending)
