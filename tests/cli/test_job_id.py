"""``pflux job id``: in-process through the dispatcher, and through the real console script."""

from __future__ import annotations

import io
import sys

import pytest

from pflux.cli import main
from support.instance import console

ID = 6787342413402046
FORMS = {
    "dec": "6787342413402046",
    "hex": "0x181d0d4d850fbe",
    "dothex": "0018.1d0d.4d85.0fbe",
    "kvs": "job.0018.1d0d.4d85.0fbe",
    "words": "cake-plume-nepal--neuron-pencil-academy",
    "f58": "ƒuzzybunny",
    "f58plain": "fuzzybunny",
}


@pytest.fixture(autouse=True)
def _utf8_f58(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FLUX_F58_FORCE_ASCII", raising=False)
    monkeypatch.delenv("PFLUX_F58_FORCE_ASCII", raising=False)


@pytest.mark.parametrize("to", sorted(FORMS))
def test_every_encoding_to_every_other(to: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["job", "id", f"--to={to}", *FORMS.values()]) == 0
    # capsys's stdout is UTF-8, so f58 keeps its ƒ
    assert capsys.readouterr().out.splitlines() == [FORMS[to]] * len(FORMS)


def test_default_is_decimal(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["job", "id", "ƒ1", "ƒ2", "fLUv", "0x10"]) == 0
    assert capsys.readouterr().out == "0\n1\n65535\n16\n"


def test_to_is_case_insensitive(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["job", "id", "-t", "HEX", "255"]) == 0
    assert capsys.readouterr().out == "0xff\n"


def test_reads_stdin_skipping_blank_lines(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("ƒ1\n\n   \n  0x10  \njob.0000.0000.0000.0002\n"))
    assert main(["job", "id", "--to=dec"]) == 0
    assert capsys.readouterr().out == "0\n16\n2\n"


def test_empty_stdin_fails(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n\n"))
    assert main(["job", "id"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "pflux-job-id: ERROR: no job ids on stdin\n"


def test_invalid_id_stops_the_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["job", "id", "1", "bar", "2"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "1\n"
    assert captured.err.startswith("pflux-job-id: ERROR: 'bar' is not a valid job id")
    assert captured.err.count("\n") == 1


def test_unknown_encoding_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["job", "id", "--to=emoji", "1"])
    assert info.value.code == 2
    assert "invalid choice: 'emoji'" in capsys.readouterr().err


# -- the real console script ---------------------------------------------------------------


def test_script_converts_and_reads_stdin() -> None:
    r = console("job", "id", "--to=words", "ƒuzzybunny")
    assert (r.returncode, r.stdout, r.stderr) == (0, FORMS["words"] + "\n", "")
    r = console("job", "id", "--to", "f58", stdin="6787342413402046\n\n1\n")
    assert (r.returncode, r.stdout, r.stderr) == (0, "ƒuzzybunny\nƒ2\n", "")


def test_script_errors() -> None:
    r = console("job", "id", "ƒ2", "bar", "ƒ3")
    assert r.returncode == 1
    assert r.stdout == "1\n"
    assert r.stderr == (
        "pflux-job-id: ERROR: 'bar' is not a valid job id: "
        "not in dec, hex, dothex, kvs, words or f58 encoding\n"
    )
    r = console("job", "id", "--to=nope", "1")
    assert r.returncode == 2
    assert r.stdout == ""
    assert "usage: pflux job id" in r.stderr


def test_script_ascii_f58() -> None:
    assert console("job", "id", "--to=f58", "65535", FLUX_F58_FORCE_ASCII="1").stdout == "fLUv\n"
    assert console("job", "id", "--to=f58", "65535", PYTHONIOENCODING="ascii").stdout == "fLUv\n"
