"""``submit``/``bulksubmit --progress``: flux's bar on a terminal's last line (the
submission's, or with ``--wait`` the jobs' counts), ``--jps``, and flux's warning, with no
bar, when stdout is not a terminal."""

from __future__ import annotations

import re

from support.instance import pflux
from support.terminal import Terminal

BAR = "\u2502"  # the bar's edges


def test_submit_progress_draws_the_submissions_bar_on_the_last_line(uri: str) -> None:
    with Terminal(uri, "submit", "--progress", "--cc=1-5", "true", size=(12, 60)) as term:
        assert term.wait() == 0
        text = term.text
    # the scroll region is every row but the last; the bar is drawn on row 12
    assert "\0337\033[1;11r\0338" in text
    assert "\0337\033[12;1H\033[2K\033[?7l\033[0mSubmitting 5 jobs: " + BAR in text
    # the last bar, full, is left as a line: 60 columns less the texts and the edges: 25
    last = text.rsplit("\033[r\0338", 1)[1]
    assert last.startswith("Submitting 5 jobs: " + BAR + "\u2588" * 25 + BAR + "100.0% 0:00:0")
    assert len(re.findall("\u0192\\w+\r\n", text)) == 5  # the ids scroll above the bar


def test_submit_wait_progress_counts_the_jobs_and_jps_shows_the_rate(uri: str) -> None:
    args = ("submit", "--progress", "--jps", "--wait", "--cc=1-2")
    with Terminal(uri, *args, "sh", "-c", "test $FLUX_JOB_CC = 1", size=(12, 70)) as term:
        assert term.wait() == 1
        last = term.text.rsplit("\033[r\0338", 1)[1]
    assert last.startswith("PD:0   R:0   CD:1   F:1   " + BAR)
    assert last.rstrip().endswith(" job/s")
    assert "100.0%" in last


def test_progress_without_a_terminal_is_flux_warning_and_no_bar(uri: str) -> None:
    proc = pflux(uri, "submit", "--progress", "--cc=1-2", "true")
    assert proc.returncode == 0
    assert proc.stderr == "pflux: WARNING: stdout is not a tty. Ignoring --progress option\n"
    assert len(proc.stdout.splitlines()) == 2
    assert "\033" not in proc.stdout
    proc = pflux(uri, "bulksubmit", "--progress", "--wait", "echo", ":::", "a", "b")
    assert proc.returncode == 0
    assert proc.stderr == "pflux: WARNING: stdout is not a tty. Ignoring --progress option\n"
    assert "\033" not in proc.stdout
