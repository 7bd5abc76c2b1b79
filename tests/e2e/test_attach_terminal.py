"""``pflux run`` and ``pflux job attach`` at a terminal: Ctrl-C, Ctrl-Z, signals, status line.

Each command runs on a real pseudo-terminal (``support.terminal``): Ctrl-C
and Ctrl-Z are typed, so they reach the client as the terminal driver sends
them, and the test reads what the terminal shows.
"""

from __future__ import annotations

import signal
import termios

from pflux.api import Client
from pflux.spec.fluid import JobID
from support.instance import held, ok
from support.terminal import Terminal

CTRL_C = b"\x03"
CTRL_Z = b"\x1a"
NOTICE = "pflux-job: one more ctrl-C within 2s to cancel or ctrl-Z to detach"
SH = ("--env=PATH=/usr/bin:/bin", "sh", "-c")
# typed at an interactive job's shell: says when sleep is the terminal's foreground job
SLEEPER = b"sh -c 'echo sleeping; exec sleep 100'\r"
# a task that says when it runs (and its job id), and what signals reach it
TRAPS = (
    'for s in INT HUP ALRM USR1 USR2; do trap "echo got $s" $s; done; '
    "trap 'echo got TERM; exit 7' TERM; "
    'echo "ready $FLUX_JOB_ID"; while :; do sleep 60 & wait $!; done'
)


def _state(uri: str, jobid: str) -> str:
    return ok(uri, "jobs", "-a", "-n", "-o", "{state}", jobid).strip()


def test_ctrl_c_warns_once_and_cancels_on_the_second(uri: str) -> None:
    with Terminal(uri, "run", *SH, TRAPS) as term:
        term.expect(r"ready ƒ\S+")
        term.send(CTRL_C)
        notice = term.expect(NOTICE)
        term.send(CTRL_C)
        term.expect(r"job\.exception ƒ\S+ type=cancel severity=0 interrupted by ctrl-C")
        assert term.wait() != 0
        assert term.text.count(NOTICE) == 1
        assert "got INT" not in term.text[notice.end() :]  # the first Ctrl-C reaches no task


def test_ctrl_c_then_ctrl_z_detaches_and_leaves_the_job_running(uri: str) -> None:
    with Terminal(uri, "run", *SH, TRAPS) as term:
        jobid = term.expect(r"ready (ƒ\S+)").group(1)
        term.send(CTRL_C)
        term.expect(NOTICE)
        term.send(CTRL_Z)
        term.expect("pflux-job: detaching...")
        assert term.wait() == 1
    assert _state(uri, jobid) == "RUN"
    ok(uri, "cancel", jobid)
    ok(uri, "job", "wait-event", jobid, "clean")


def test_signals_to_the_client_reach_the_job(uri: str) -> None:
    with Terminal(uri, "run", *SH, TRAPS) as term:
        term.expect(r"ready ƒ\S+")
        for signum in (signal.SIGHUP, signal.SIGALRM, signal.SIGUSR1, signal.SIGUSR2):
            term.proc.send_signal(signum)
            term.expect(f"got {signum.name[3:]}")
        term.proc.send_signal(signal.SIGTERM)
        term.expect("got TERM")
        assert term.wait() == 7


def test_attach_forwards_signals_and_read_only_attach_does_not(uri: str) -> None:
    with Terminal(uri, "run", *SH, TRAPS) as term:
        jobid = term.expect(r"ready (ƒ\S+)").group(1)
        with Terminal(uri, "job", "attach", "--read-only", jobid) as reader:
            reader.expect(r"ready ƒ\S+")
            reader.proc.send_signal(signal.SIGUSR1)
            assert reader.wait() != 0  # not caught: the signal ended the client
        with Terminal(uri, "job", "attach", jobid) as watcher:
            watcher.expect(r"ready ƒ\S+")
            watcher.proc.send_signal(signal.SIGUSR1)
            watcher.expect("got USR1")
            watcher.proc.send_signal(signal.SIGTERM)
            assert watcher.wait() == 7
        assert term.wait() == 7
        assert term.text.count("got USR1") == 1


def test_status_line_while_waiting_ends_when_the_job_starts(uri: str) -> None:
    with Client(uri) as client:
        first = held(client)
    with Terminal(uri, "run", f"--dependency=afterany:{first}", *SH, "echo hello") as term:
        line = r"\rpflux-job: ƒ\S+ resolving dependencies +00:00:0\d\r"
        seen = term.expect(line)
        ok(uri, "job", "urgency", str(first), "16")
        term.expect(r"started +\d\d:\d\d:\d\d\r\r?\n", seen.end())
        term.expect("hello", seen.end())
        assert term.wait() == 0


def test_status_line_says_waiting_for_resources_and_clears_for_an_exception(uri: str) -> None:
    with Terminal(uri, "run", "--urgency=hold", "true") as term:
        seen = term.expect(r"\rpflux-job: ƒ\S+ waiting for resources +00:00:0\d\r")
        term.send(CTRL_C)
        term.expect(NOTICE, seen.end())
        term.send(CTRL_C)
        term.expect(r"\r\x1b\[K\d+\.\d{3}s: job\.exception", seen.end())
        assert term.wait() == 1


def test_no_status_line_unless_stdin_stdout_and_stderr_are_terminals(uri: str) -> None:
    with Client(uri) as client:
        jobid = held(client)
    f58 = JobID(jobid).f58
    with Terminal(uri, "job", "attach", f58, stdin_tty=False) as piped:
        with Terminal(uri, "job", "attach", f58) as interactive:
            # shown 2 s after the later client started: the first has waited longer
            interactive.expect(r"waiting for resources +\d\d:\d\d:\d\d\r")
            ok(uri, "cancel", f58)
            assert interactive.wait() == 1
        assert piped.wait() == 1
        assert "waiting for" not in piped.text
        assert "job.exception" in piped.text


def test_pty_interactive_makes_this_terminal_the_jobs_until_it_ends(uri: str) -> None:
    command = ("run", "-o", "pty.interactive", *SH[:1], "--env=PS1=job> ", "sh")
    with Terminal(uri, *command, size=(37, 101)) as term:
        term.expect("job> ")
        term.send(b"stty size; echo $((6*7))\r")
        seen = term.expect(r"37 101\r\n42\r\n")
        assert term.text.count("echo $((6*7))") == 1  # echoed by the job's pty alone: raw here
        term.resize(40, 120)
        term.send(b"stty size\r")
        # the prompt before the next line: typed sooner, the job's pty echoes it first
        seen = term.expect(r"40 120\r\njob> ", seen.end())
        term.send(SLEEPER)
        seen = term.expect(r"\r\nsleeping\r\n", seen.end())
        term.send(CTRL_C)  # to the job's terminal, which interrupts sleep: no notice here
        term.expect("job> ", seen.end())
        term.send(b"exit 3\r")
        assert term.wait() == 3
        assert NOTICE not in term.text
        _, _, _, lflag, *_ = termios.tcgetattr(term.master)  # the terminal is put back
        assert lflag & (termios.ECHO | termios.ICANON | termios.ISIG) == (
            termios.ECHO | termios.ICANON | termios.ISIG
        )


def test_attach_to_an_interactive_job_makes_that_terminal_the_jobs_too(uri: str) -> None:
    command = ("run", "-o", "pty.interactive", *SH[:1], "--env=PS1=job> ", "sh")
    with Terminal(uri, *command) as term:
        term.expect("job> ")
        term.send(b"echo $FLUX_JOB_ID\r")
        jobid = term.expect(r"\n(ƒ\S+)\r\n").group(1)
        with Terminal(uri, "job", "attach", jobid, size=(33, 77)) as other:
            seen = other.expect(jobid)  # the output so far: the terminal is the job's now
            other.send(b"stty size; " + SLEEPER)
            seen = other.expect(r"33 77\r\n", seen.end())
            seen = other.expect(r"\nsleeping\r\n", seen.end() - 1)
            other.send(CTRL_C)  # to the job's terminal: sleep is interrupted, no notice here
            other.expect("job> ", seen.end())
            other.send(b"exit 5\r")
            assert other.wait() == 5
            assert NOTICE not in other.text
        assert term.wait() == 5
