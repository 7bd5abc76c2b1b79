"""CURVE certificate files: zcert's text read back as written, and every unsafe file refused."""

from __future__ import annotations

import os
import string
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from zmq.utils import z85

from pflux.broker.boot import Cert, CertError
from pflux.broker.cert import (
    format_cert,
    key_problem,
    load_cert,
    new_cert,
    parse_cert,
    write_cert,
)

META_KEYS = st.text(string.ascii_letters + string.digits + "-.", min_size=1, max_size=20)
META_VALUES = st.text(
    string.ascii_letters + string.digits + ".-:+=^!/*?&<>()[]{}@%$# ", max_size=40
)
KEYPAIRS = st.builds(lambda _: new_cert(), st.integers())


@given(KEYPAIRS, st.dictionaries(META_KEYS, META_VALUES, max_size=6))
def test_a_written_certificate_reads_back(cert: Cert, meta: dict[str, str]) -> None:
    got, got_meta = parse_cert(format_cert(cert, meta), "c")
    assert got == cert
    # a value's outer blanks are kept: the quotes hold them
    assert got_meta == meta


@given(st.binary(min_size=32, max_size=32))
def test_every_32_byte_key_is_a_valid_z85_key(raw: bytes) -> None:
    assert key_problem(z85.encode(raw).decode()) is None


def test_flux_keygen_layout_is_read() -> None:
    cert = new_cert()
    text = (
        "#  ZeroMQ CURVE **Secret** Certificate\n#  DO NOT DISTRIBUTE\n\nmetadata\n"
        '    name = "fluke1"\n    keygen.flux-core-version = "0.70.0"\ncurve\n'
        f'    public-key = "{cert.public}"\n    secret-key = "{cert.secret}"\n'
    )
    assert parse_cert(text, "f") == (cert, {"name": "fluke1", "keygen.flux-core-version": "0.70.0"})


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("    secret-key", "#"), "c: no secret-key in its curve section"),
        (lambda t: t.replace("    public-key", "#"), "c: no public-key in its curve section"),
        (lambda t: t.replace('public-key = "', 'public-key = "x'), "public-key: not 40 Z85"),
        (lambda t: t.replace('secret-key = "', 'secret-key = "~'), "secret-key: not 40 Z85"),
        (lambda t: t.replace("curve\n", "curvy\n"), "expected 'metadata', 'curve' or an entry"),
        (lambda t: t.replace('name = "n"', "name = n"), 'expected KEY = "VALUE"'),
        (lambda t: t.replace("    public-key", "    pubkey"), "holds 'pubkey', not a key"),
        (lambda t: t.replace('name = "n"', 'name = "n"\n    name = "m"'), "name is given twice"),
        (lambda t: t.replace('name = "n"', 'na!me = "n"'), "metadata key 'na!me'"),
    ],
)
def test_a_broken_certificate_is_refused_naming_the_rule(edit, message) -> None:  # type: ignore[no-untyped-def]
    text = edit(format_cert(new_cert(), {"name": "n"}))
    with pytest.raises(CertError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_cert(text, "c")


def test_a_public_key_of_another_pair_is_refused() -> None:
    one, two = new_cert(), new_cert()
    text = format_cert(Cert(two.public, one.secret), {})
    with pytest.raises(CertError, match="c: public-key is not the secret-key's public key"):
        parse_cert(text, "c")


def test_an_overflowing_z85_group_is_refused() -> None:
    assert "overflows" in (key_problem("#" * 40) or "")


def test_write_makes_a_private_file_and_never_overwrites(tmp_path: Path) -> None:
    path = tmp_path / "curve.cert"
    cert = new_cert()
    write_cert(path, cert, {"name": "x"})
    assert path.stat().st_mode & 0o777 == 0o600
    assert load_cert(path, os.getuid()) == cert
    with pytest.raises(CertError, match=f"{path}: file exists; remove it"):
        write_cert(path, new_cert(), {})
    assert load_cert(path, os.getuid()) == cert


def test_a_file_others_may_read_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c"
    write_cert(path, new_cert(), {})
    path.chmod(0o640)
    with pytest.raises(CertError, match=r"readable or writable by group or others \(mode 0640\)"):
        load_cert(path, os.getuid())
    path.chmod(0o602)
    with pytest.raises(CertError, match=r"\(mode 0602\)"):
        load_cert(path, os.getuid())
    path.chmod(0o400)
    assert load_cert(path, os.getuid()).secret


def test_a_file_of_another_owner_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c"
    write_cert(path, new_cert(), {})
    other = os.getuid() + 1
    with pytest.raises(CertError, match=f"owned by uid {os.getuid()}, not by the instance owner"):
        load_cert(path, other)


def test_a_missing_file_is_refused_and_a_link_judged_by_its_file(tmp_path: Path) -> None:
    with pytest.raises(CertError, match=f"{tmp_path / 'nope'}: No such file"):
        load_cert(tmp_path / "nope", os.getuid())
    cert = new_cert()
    write_cert(tmp_path / "c", cert, {})
    (tmp_path / "link").symlink_to(tmp_path / "c")
    assert load_cert(tmp_path / "link", os.getuid()) == cert
    (tmp_path / "c").chmod(0o644)
    with pytest.raises(CertError, match="link: readable or writable by group or others"):
        load_cert(tmp_path / "link", os.getuid())
