"""``start``'s flux-core options: ``-o/--broker-opts`` (comma-separated broker options),
``-s`` (``--test-size``), and the ``-S`` attributes ``log-filename`` and ``log-level``;
anything else refused, naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.instance import console


def test_broker_opts_set_log_filename_and_s_sizes_the_instance(tmp_path: Path) -> None:
    log = tmp_path / "broker.log"
    proc = console("start", f"-o,-Slog-filename={log},-Slog-level=7", "-s", "2",
                   "sh", "-c", "pflux getattr size")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "2\n"
    text = log.read_text()
    assert " pflux.broker INFO: instance ready at local://" in text


def test_log_level_limits_what_log_filename_gets(tmp_path: Path) -> None:
    log = tmp_path / "quiet.log"
    proc = console("start", "-S", f"log-filename={log}", "-S", "log-level=3", "true")
    assert proc.returncode == 0, proc.stderr
    assert log.read_text() == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["-o,-Sbogus=1"],
            "-S bogus=1: pflux's broker cannot set attribute 'bogus' (it sets: ",
        ),
        (["-o,-x"], "--broker-opts: -x: pflux's broker does not take it (-v, -S ATTR=VAL"),
        (["-Slog-level=9"], "-S log-level=9: log-level must be 0-7"),
        (["-Slog-filename=/nonexistent/x"], "-S log-filename=/nonexistent/x: No such file"),
    ],
)
def test_what_start_cannot_honour_is_refused(args: list[str], message: str) -> None:
    proc = console("start", *args, "true")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"pflux-start: ERROR: {message}")


def test_wrap_runs_every_broker_under_its_arguments() -> None:
    """``--wrap=env,VAR=1``: rank 0's broker and each other rank's run under ``env``, so
    each has VAR (an initial program and a remote command inherit it from theirs)."""
    script = 'echo "0 $PFLUX_WRAP_TEST"; pflux exec -r 1 sh -c "echo 1 \\$PFLUX_WRAP_TEST"'
    proc = console("start", "--wrap=env,PFLUX_WRAP_TEST=wrapped", "-s", "2", "sh", "-c", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["0 wrapped", "1 wrapped"]


@pytest.mark.parametrize(
    ("wrap", "message"),
    [
        ("env,,x", "--wrap=env,,x: an empty argument (ARGS are comma-separated)"),
        ("/nonexistent/wrapper", "--wrap: cannot run /nonexistent/wrapper: No such file"),
    ],
)
def test_a_wrap_that_cannot_run_is_refused(wrap: str, message: str) -> None:
    proc = console("start", f"--wrap={wrap}", "true")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"pflux-start: ERROR: {message}"), proc.stderr
