"""``pflux keygen``: flux keygen's certificate, options and warning; never an overwrite."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from pflux.broker.cert import load_cert, parse_cert
from pflux.cli import main


def _meta(path: Path) -> dict[str, str]:
    return parse_cert(path.read_text(), str(path))[1]


def test_keygen_writes_a_private_certificate_with_flux_metadata(tmp_path: Path) -> None:
    path = tmp_path / "curve.cert"
    assert main(["keygen", str(path)]) == 0
    assert path.stat().st_mode & 0o777 == 0o600
    assert load_cert(path, os.getuid()).secret
    meta = _meta(path)
    host = socket.gethostname()
    assert meta["name"] == host
    assert meta["keygen.hostname"] == host
    assert meta["keygen.userid"] == str(os.getuid())
    assert {"keygen.time", "keygen.pflux-version", "keygen.zmq-version"} <= meta.keys()


def test_name_and_meta_set_metadata_first_value_winning(tmp_path: Path) -> None:
    path = tmp_path / "c"
    args = ["--name=fluke", "--meta=site=lab,name=other", "--meta", "rack=4,empty", str(path)]
    assert main(["keygen", *args]) == 0
    meta = _meta(path)
    assert (meta["name"], meta["site"], meta["rack"], meta["empty"]) == ("fluke", "lab", "4", "")


def test_an_existing_file_is_never_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c"
    path.write_text("precious")
    assert main(["keygen", str(path)]) == 1
    assert capsys.readouterr().err == (
        f"pflux-keygen: ERROR: {path}: file exists; remove it to make a new certificate\n"
    )
    assert path.read_text() == "precious"


def test_without_path_it_warns_that_nothing_is_saved(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["keygen"]) == 0
    assert capsys.readouterr().err == (
        "pflux-keygen: WARNING: add PATH argument to save generated certificate\n"
    )


def test_metadata_a_certificate_cannot_hold_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keygen", "--meta=bad key=1", str(tmp_path / "c")]) == 2
    assert "pflux-keygen: ERROR: --meta: metadata key 'bad key'" in capsys.readouterr().err
    assert main(["keygen", '--name=a"b', str(tmp_path / "c")]) == 2
    assert "pflux-keygen: ERROR: --name: metadata name: value 'a\"b'" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()
