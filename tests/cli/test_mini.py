"""``pflux mini CMD``: older flux's spelling of the submission commands."""

from __future__ import annotations

import json

import pytest

from pflux.cli import main


def test_mini_runs_the_submission_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mini", "submit", "--dry-run", "--env=-*", "-n2", "true"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["tasks"][0]["command"] == ["true"]
    assert out.err == ""  # not at a terminal: no warning
    assert main(["mini", "bulksubmit", "--dry-run", "echo", "{}", ":::", "a"]) == 0
    assert capsys.readouterr().out == "bulksubmit: submit echo a\n"


def test_mini_warns_at_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stderr.isatty", lambda: True)
    assert main(["mini", "run", "--dry-run", "true"]) == 0
    warning = "pflux-mini: WARNING: flux mini is deprecated, use flux run\n"
    assert capsys.readouterr().err == warning


def test_mini_takes_only_submission_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mini", "jobs"]) == 2
    assert capsys.readouterr().err == "pflux-mini: ERROR: 'jobs' is not a submission command\n"
