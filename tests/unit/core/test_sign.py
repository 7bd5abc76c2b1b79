"""J, a signed job request (RFC 15): round trips under ``none`` and ``munge``, and
each kind of damage refused with the rule it breaks."""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from unittest import mock

import pytest
from _pfluxcore import sign
from _pfluxcore.sign import SignError, munge_available, parse, unwrap, wrap
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pflux._corefinder import SHIM_PYTHON
from support.munge import munged

__all__ = ["munged"]

payloads = st.one_of(st.binary(max_size=200), st.text(max_size=200))
pieces = st.sampled_from([3, 6, 7, 3 << 16])
uses_munge = pytest.mark.usefixtures("munged")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _bytes(payload: bytes | str) -> bytes:
    return payload.encode() if isinstance(payload, str) else payload


def _header(**fields: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(fields).encode()).decode().rstrip("=")


@given(payloads, st.integers(0, 2**32 - 1), pieces)
def test_none_holds_the_payload_and_the_userid(
    payload: bytes | str, userid: int, piece: int
) -> None:
    with mock.patch.object(sign, "PIECE", piece):
        signed = wrap(payload, mechanism="none", userid=userid)
    header, body, signature = signed.split(".")
    assert json.loads(_unb64(header)) == {"version": 1, "mechanism": "none", "userid": userid}
    assert _unb64(body) == _bytes(payload)
    assert signature == "none"
    assert not set(signed) & set("=+/")  # base64url, unpadded
    got = unwrap(signed, verify=False)
    assert (got.userid, got.mechanism, got.payload, got.ctime) == (
        userid,
        "none",
        _bytes(payload),
        0,
    )
    assert (parse(signed).userid, parse(signed).mechanism) == (userid, "none")


def test_none_is_believed_for_the_verifier_alone() -> None:
    mine = wrap(b"{}", mechanism="none", userid=os.getuid())
    assert unwrap(mine, allowed=("none",)).userid == os.getuid()
    other = wrap(b"{}", mechanism="none", userid=os.getuid() + 1)
    with pytest.raises(
        SignError,
        match=rf"^sign-none-verify: header userid {os.getuid() + 1} != real {os.getuid()}$",
    ):
        unwrap(other, allowed=("none",))
    with pytest.raises(SignError, match=r"^sign-none-verify: signature invalid$"):
        unwrap(mine[:-4] + "nonE", allowed=("none",))
    with pytest.raises(SignError, match=r"^sign-unwrap: header mechanism=none not allowed$"):
        unwrap(mine)  # munge alone, unless told


@uses_munge
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(payloads, pieces)
def test_munge_round_trip(payload: bytes | str, piece: int) -> None:
    with mock.patch.object(sign, "PIECE", piece):
        signed = wrap(payload)
        got = unwrap(signed, max_ttl=60)
    assert (got.userid, got.mechanism, got.payload) == (os.getuid(), "munge", _bytes(payload))
    assert got.ctime > 0
    assert signed.split(".")[2].startswith("MUNGE:")


@uses_munge
def test_munge_credential_decoded_again_is_accepted() -> None:
    # every node's helper decodes the same J, and again after ingest: MUNGE's replay is no fault
    signed = wrap(b'{"a": 1}')
    assert unwrap(signed).payload == unwrap(signed).payload == b'{"a": 1}'


@uses_munge
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_any_change_to_header_or_payload_is_refused(data: st.DataObject) -> None:
    signed = wrap(b'{"version": 1, "tasks": [1, 2, 3]}')
    end = signed.index(".", signed.index(".") + 1)
    at = data.draw(st.integers(0, end - 1))
    char = data.draw(st.sampled_from("AQgw_-.x=+/ é"))
    if char == signed[at]:
        return
    with pytest.raises(SignError):
        unwrap(signed[:at] + char + signed[at + 1 :])


@given(st.text(max_size=300))
def test_garbage_is_refused_as_sign_error(text: str) -> None:
    with pytest.raises(SignError, match=r"^sign-"):
        unwrap(text, allowed=("none", "munge"))


@uses_munge
def test_payload_altered_after_signing() -> None:
    signed = wrap(b'{"command": ["true"]}')
    head, _, rest = signed.partition(".")
    forged = head + "." + base64.urlsafe_b64encode(b'{"command": ["evil"]}').decode().rstrip("=")
    forged += "." + rest.split(".", 1)[1]
    with pytest.raises(SignError, match=r"^sign-munge-verify: SHA256 hash mismatch$"):
        unwrap(forged)
    assert unwrap(forged, verify=False).payload == b'{"command": ["evil"]}'  # parsing alone


@uses_munge
def test_userid_claimed_must_be_munges() -> None:
    import hashlib

    signed_input = _header(version=1, mechanism="munge", userid=os.getuid() + 7) + ".e30"
    digest = sign.HASH_SHA256 + hashlib.sha256(signed_input.encode()).digest()
    forged = signed_input + "." + sign._munge_encode(digest)
    with pytest.raises(SignError, match=r"^sign-munge-verify: uid mismatch$"):
        unwrap(forged)


@uses_munge
def test_max_ttl() -> None:
    signed = wrap(b"{}")
    made = unwrap(signed).ctime
    with mock.patch.object(sign, "_now", return_value=made + 100):
        assert unwrap(signed, max_ttl=100).ctime == made
        with pytest.raises(SignError, match=r"^sign-munge-verify: max-ttl exceeded$"):
            unwrap(signed, max_ttl=99)


@uses_munge
def test_credential_damage_is_refused() -> None:
    signed = wrap(b"{}")
    with pytest.raises(SignError, match=r"^sign-munge-verify: munge_decode: "):
        unwrap(signed[:-6])
    with pytest.raises(SignError, match=r"^sign-munge-verify: munge_decode: .*not ASCII"):
        unwrap(signed + "é")
    with pytest.raises(SignError, match=r"^sign-munge-verify: munge_decode: .* longer than 4096"):
        unwrap(signed + "A" * 4096)


@uses_munge
def test_parse_checks_a_signatures_form_and_leaves_its_proof_to_unwrap() -> None:
    signed = wrap(b"{}")
    head, body, credential = signed.split(".")
    found = parse(signed)
    assert (found.userid, found.mechanism, found.payload, found.ctime) == (
        os.getuid(),
        "munge",
        b"{}",
        0,
    )
    altered = f"{head}.{base64.urlsafe_b64encode(b'[1]').decode().rstrip('=')}.{credential}"
    assert parse(altered).payload == b"[1]"  # well formed: only munged can tell
    for damaged, fault in [
        (signed[:-1], "not a MUNGE credential"),
        (f"{head}.{body}.none", "not a MUNGE credential"),
        (f"{head}.{body}.MUNGE::", "not a MUNGE credential"),
        (signed + "é", "the credential is not ASCII"),
        (signed + "\0:", "the credential holds a NUL"),
        (signed + "A" * 4096, "the credential is longer than 4096 characters"),
    ]:
        with pytest.raises(SignError, match=r"^sign-unwrap: signature: " + fault):
            parse(damaged)
    none = wrap(b"{}", mechanism="none", userid=5)
    assert parse(none).userid == 5
    with pytest.raises(SignError, match=r"^sign-none-verify: signature invalid$"):
        parse(none[: -len("none")] + "nonf")


@given(st.text(max_size=300))
def test_parse_refuses_garbage_as_sign_error(text: str) -> None:
    with pytest.raises(SignError, match=r"^sign-"):
        parse(text)


@pytest.mark.parametrize(
    ("signed", "message"),
    [
        ("", "header decode error: J is not HEADER.PAYLOAD.SIGNATURE"),
        ("eyJ2ZXJzaW9uIjoxfQ", "header decode error: J is not HEADER.PAYLOAD.SIGNATURE"),
        ("e30.e30.none", "header version missing"),
        (_header(version=2) + ".e30.none", "header version=2 unknown"),
        (_header(version=True) + ".e30.none", "header version=True unknown"),
        (_header(version=1) + ".e30.none", "header mechanism missing"),
        (_header(version=1, mechanism="curve") + ".e30.none", "header mechanism=curve unknown"),
        (_header(version=1, mechanism="none") + ".e30.none", "header userid missing"),
        (
            _header(version=1, mechanism="none", userid=-1) + ".e30.none",
            "header userid=-1 is not a userid",
        ),
        (
            _header(version=1, mechanism="none", userid="0") + ".e30.none",
            "header userid='0' is not a userid",
        ),
        ("W10.e30.none", "header decode error: not a JSON object"),
        ("e3.e30.none", "header decode error: "),
        ("e3+.e30.none", "header decode error: not unpadded base64url"),
        ("e30=.e30.none", "header decode error: not unpadded base64url"),
        (
            _header(version=1, mechanism="none", userid=0) + ".e30",
            "payload decode error: no signature follows",
        ),
        (
            _header(version=1, mechanism="none", userid=0) + ".e30x1.none",
            "payload decode error: not unpadded base64url",
        ),
        (
            _header(version=1, mechanism="none", userid=0) + ".e3/.none",
            "payload decode error: not unpadded base64url",
        ),
        (
            _header(version=1, mechanism="none", userid=0) + ".e30\u00e9.none",
            "payload decode error: not unpadded base64url",
        ),
        (
            _header(version=1, mechanism="none", userid=0) + ".e3\udcff.none",
            "payload decode error: not unpadded base64url",
        ),
        ("e3\x00.e30.none", "header decode error: not unpadded base64url"),
    ],
)
def test_malformed_j_names_its_fault(signed: str, message: str) -> None:
    with pytest.raises(SignError) as info:
        unwrap(signed, verify=False)
    assert str(info.value).startswith("sign-unwrap: " + message)


def test_a_header_read_once_is_read_the_same_and_a_bad_one_refused_each_time() -> None:
    good = _header(version=1, mechanism="none", userid=4242)
    bad = _header(version=1, mechanism="none", userid=-1)
    for _ in range(2):
        assert _claims(good + ".e30.none") == ("none", 4242)
        with pytest.raises(SignError, match="header userid=-1 is not a userid"):
            _claims(bad + ".e30.none")
    assert sign._parsed[good] == ("none", 4242)
    assert bad not in sign._parsed


def test_the_headers_kept_are_few_and_short() -> None:
    padded = base64.urlsafe_b64encode(
        json.dumps({"version": 1, "mechanism": "none", "userid": 1, "pad": "x" * 200}).encode()
    ).decode()
    assert _claims(padded.rstrip("=") + ".e30.none") == ("none", 1)
    assert padded.rstrip("=") not in sign._parsed
    for userid in range(1100):
        assert _claims(_header(version=1, mechanism="none", userid=userid) + ".e30.none") == (
            "none",
            userid,
        )
    assert len(sign._parsed) <= 1024


def test_wrap_refuses_what_it_cannot_sign() -> None:
    with pytest.raises(SignError, match=r"^sign-wrap: unknown mechanism: curve$"):
        wrap(b"", mechanism="curve")
    with pytest.raises(SignError, match=r"^sign-wrap: mechanism none needs a userid$"):
        wrap(b"", mechanism="none")
    with pytest.raises(SignError, match=r"^sign-wrap: munge signs as the caller"):
        wrap(b"", userid=os.getuid() + 1)
    with pytest.raises(SignError, match=r"^sign-wrap: userid must be a non-negative integer"):
        wrap(b"", mechanism="none", userid=-1)
    with pytest.raises(SignError, match=r"^sign-unwrap: J must be a string, not bytes$"):
        unwrap(b"x.y.none")  # type: ignore[arg-type]


def test_missing_libmunge_is_named() -> None:
    with (
        mock.patch.object(sign, "LIBMUNGE", "libmunge-absent.so.2"),
        mock.patch.dict(sign._munge, clear=True),
    ):
        assert munge_available() == "MUNGE is not installed (libmunge-absent.so.2 not found)"
        with pytest.raises(
            SignError, match=r"^MUNGE is not installed \(libmunge-absent.so.2 not found\)$"
        ):
            wrap(b"{}")


def test_import_is_cheap() -> None:
    code = (
        "import sys; import _pfluxcore.sign;"
        "print(sorted({'ctypes', 'json', 're', 'hashlib', 'typing'} & set(sys.modules)))"
    )
    path = f"import sys; sys.path.insert(0, {str(SHIM_PYTHON)!r});"
    proc = subprocess.run(
        [sys.executable, "-I", "-c", path + code], capture_output=True, text=True, check=True
    )
    assert proc.stdout.strip() == "[]"


@pytest.mark.skipif(
    os.getuid() != 0 or shutil.which("unshare") is None,
    reason="needs root and unshare: a mount namespace where no munged's socket is",
)
def test_munged_not_running_is_named() -> None:
    code = (
        f"import sys; sys.path.insert(0, {str(SHIM_PYTHON)!r});"
        "from _pfluxcore.sign import SignError, munge_available, wrap; print(munge_available())\n"
        "try:\n    wrap(b'{}')\nexcept SignError as exc:\n    print(exc)"
    )
    script = 'mount -t tmpfs tmpfs /run && exec "$0" -I -c "$1"'
    proc = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, sys.executable, code],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    available, signing = proc.stdout.splitlines()
    assert available.startswith("munged is not running: Failed to access ")
    assert signing == available


def _claims(J: str) -> tuple[str, int]:  # noqa: N803 (RFC 15's name)
    """The mechanism and userid J's header claims."""
    found = unwrap(J, verify=False)
    return found.mechanism, found.userid
