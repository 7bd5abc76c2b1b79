"""``pflux watch`` against a live instance: the output of jobs named or selected, active
or already inactive, labelled with ``-l``, the largest exit code as its status, and
flux-watch(1)'s errors."""

from __future__ import annotations

import time

from support.instance import fails, pflux


def submit(uri: str, script: str) -> str:
    """A job run to its end (``--wait``: its exit code is the command's, not checked)."""
    return pflux(uri, "submit", "--wait", "sh", "-c", script).stdout.strip()


def test_watch_copies_output_and_exits_with_the_largest_code(uri: str) -> None:
    first = submit(uri, "echo one; echo two >&2")
    second = submit(uri, "echo three; exit 3")
    proc = pflux(uri, "watch", first, second)
    assert proc.returncode == 3
    assert proc.stdout == "one\nthree\n"
    assert proc.stderr == f"two\n{second}: task(s) exited with exit code 3\n"
    labelled = pflux(uri, "watch", "-l", first)
    assert (labelled.returncode, labelled.stdout, labelled.stderr) == (0, "0: one\n", "0: two\n")
    every = pflux(uri, "watch", "--all")  # the caller's jobs, inactive ones too
    assert every.returncode == 3
    assert sorted(every.stdout.split()) == ["one", "three"]


def test_watch_selection_errors(uri: str) -> None:
    assert pflux(uri, "watch", "-a").stderr == "pflux-watch: No matching jobs\n"
    assert fails(uri, "watch") == (
        "pflux-watch: ERROR: At least one job selection option is required\n"
        "Try 'pflux watch --help' for more information.\n"
    )
    assert fails(uri, "watch", "-A", "--count=x", rc=2) == (
        "pflux-watch: ERROR: --count: must be an integer >= 0, got 'x'\n"
    )
    later = str(time.time() + 3600)
    assert fails(uri, "watch", f"--since={later}", rc=2) == (
        f"pflux-watch: ERROR: --since={later} appears to be in the future\n"
    )
    assert (
        fails(uri, "watch", "-f", "bogus")
        == "pflux-watch: ERROR: Invalid filter specified: bogus\n"
    )
    assert fails(uri, "watch", "--jps", "-A", rc=2) == (
        "pflux-watch: ERROR: --jps: only with --progress\n"
    )


def test_watch_progress_off_a_terminal_and_verbose(uri: str) -> None:
    jobid = submit(uri, "echo out")
    proc = pflux(uri, "watch", "--progress", "--jps", "-v", jobid)
    assert proc.returncode == 0
    assert proc.stdout == "out\n"
    assert proc.stderr.splitlines()[:2] == [
        "pflux-watch: Watching 1 jobs",
        "pflux-watch: WARNING: stdout is not a tty. Ignoring --progress option",
    ]
    assert proc.stderr.splitlines()[2].endswith("complete: status=0")
