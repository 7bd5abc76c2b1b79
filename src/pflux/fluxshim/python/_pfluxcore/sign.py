"""J, a signed job request (RFC 15): ``HEADER.PAYLOAD.SIGNATURE``.

HEADER is the JSON object ``{"version": 1, "mechanism": ..., "userid": ...}``,
HEADER and PAYLOAD are unpadded base64url. Under ``munge`` the signature is a
MUNGE credential whose payload is a hash-type byte (1: SHA-256) and the SHA-256
of ``HEADER.PAYLOAD``: only the user MUNGE says made it can have made it, so an
instance running as another account cannot forge a user's job request. Under
``none`` the signature is the word ``none``, and only the verifier's own userid
is believed.

libmunge is loaded through ctypes at first use (a credential costs a round trip
to munged, no process), so importing this module stays cheap. A jobspec may be
megabytes long: J is encoded from its text a piece at a time and grown in
place, so encoding holds J and one piece, never the payload's bytes or base64
as well.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (several ms)
if TYPE_CHECKING:
    from typing import Any, Collection

VERSION = 1
MECHANISMS = ("none", "munge")
PIECE = 3 << 16  # characters of the payload encoded at a time
LIBMUNGE = "libmunge.so.2"
HASH_SHA256 = b"\x01"  # the digest's first byte in a munge signature: its hash type
# characters of a munge signature: one holding a digest is a few hundred, so a longer one
# is refused before munged is asked (a client cannot make the verifier ship megabytes)
MAX_CREDENTIAL = 4096

_URLSAFE = bytes.maketrans(b"+/", b"-_")
_STANDARD = bytes.maketrans(b"-_", b"+/")
_BASE64URL = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
# libmunge's error codes and options (munge.h)
_EMUNGE_SUCCESS = 0
_EMUNGE_SOCKET = 6
_EMUNGE_CRED_EXPIRED = 15
_EMUNGE_CRED_REPLAYED = 17
_MUNGE_OPT_ENCODE_TIME = 6


class SignError(Exception):
    """J could not be made, or is not what it claims: the message says which rule failed."""


class Signed:
    """An unwrapped J: who signed it, how, what, and when (``ctime``: 0 under ``none``
    and when J was not verified)."""

    __slots__ = ("ctime", "mechanism", "payload", "userid")

    def __init__(self, userid: int, mechanism: str, payload: bytes, ctime: float) -> None:
        self.userid = userid
        self.mechanism = mechanism
        self.payload = payload
        self.ctime = ctime

    def __repr__(self) -> str:
        return (
            f"Signed(userid={self.userid}, mechanism={self.mechanism!r},"
            f" payload=<{len(self.payload)} bytes>, ctime={self.ctime})"
        )


def wrap(payload: bytes | str, *, mechanism: str = "munge", userid: int | None = None) -> str:
    """J for ``payload`` (a str is signed as its UTF-8 bytes).

    ``none`` needs ``userid``; ``munge`` signs as this process's user, so a
    ``userid`` given must be that one. Raises SignError naming what failed.
    """
    if mechanism == "munge":
        uid = os.getuid()
        if userid is not None and userid != uid:
            raise SignError(f"sign-wrap: munge signs as the caller ({uid}), not userid {userid}")
        userid = uid
    elif mechanism == "none":
        if userid is None:
            raise SignError("sign-wrap: mechanism none needs a userid")
    else:
        raise SignError(f"sign-wrap: unknown mechanism: {mechanism}")
    if type(userid) is not int or userid < 0:
        raise SignError(f"sign-wrap: userid must be a non-negative integer, not {userid!r}")
    digest = None
    if mechanism == "munge":
        import hashlib

        digest = hashlib.sha256()
    head = _head(mechanism, userid)
    if digest is not None:
        digest.update(head)
    signed = head.decode()
    carry = b""  # the last bytes short of 3, encoded with the next piece
    for start in range(0, len(payload), PIECE):
        piece = payload[start : start + PIECE]
        data = carry + (piece.encode() if isinstance(piece, str) else piece)
        whole = len(data) - len(data) % 3
        encoded = _b64(data[:whole])
        if digest is not None:
            digest.update(encoded)
        signed += encoded.decode()  # grows in place: ``signed`` is its only reference
        carry = data[whole:]
    encoded = _b64(carry)
    signed += encoded.decode()
    if digest is None:
        signed += ".none"
    else:
        digest.update(encoded)
        signed += "." + _munge_encode(HASH_SHA256 + digest.digest())
    return signed


def unwrap(
    J: str,  # noqa: N803 (RFC 15's name)
    *,
    verify: bool = True,
    allowed: Collection[str] = ("munge",),
    max_ttl: float | None = None,
) -> Signed:
    """J's signer, mechanism, payload and signing time.

    With ``verify``, the mechanism must be one of ``allowed`` and the
    signature must prove the header's userid (``munge``: by munged, which
    accepts a credential decoded before or past MUNGE's own TTL, this
    checking ``max_ttl`` seconds instead; ``none``: only for this process's
    own userid). Without, J is only parsed. Raises SignError naming what is
    wrong.
    """
    if not isinstance(J, str):
        raise SignError(f"sign-unwrap: J must be a string, not {type(J).__name__}")
    head_end = J.find(".")
    mechanism, userid = _parse_header(J[:head_end] if head_end >= 0 else J, head_end)
    if verify and mechanism not in allowed:
        raise SignError(f"sign-unwrap: header mechanism={mechanism} not allowed")
    pay_end = J.find(".", head_end + 1)
    if pay_end < 0:
        raise SignError("sign-unwrap: payload decode error: no signature follows the payload")
    payload = _unb64(J, head_end + 1, pay_end, "payload")
    ctime = 0.0
    if verify and mechanism == "none":
        _verify_none(userid, J[pay_end + 1 :])
    elif verify:
        ctime = _verify_munge(userid, J, pay_end, max_ttl)
    return Signed(userid, mechanism, payload, ctime)


def parse(J: str) -> Signed:  # noqa: N803 (RFC 15's name)
    """J unwrapped with its signature checked for form only, not proved (flux-security's
    NOVERIFY): job-ingest's check of a guest's request, which the connection already
    names, the proof left to the helper that runs the job as its signer. Raises
    SignError naming what is malformed."""
    signed = unwrap(J, verify=False)
    signature = J[J.rfind(".") + 1 :]
    if signed.mechanism == "none":
        if signature != "none":
            raise SignError("sign-none-verify: signature invalid")
    else:
        _credential(signature, "sign-unwrap: signature")
    return signed


def _verify_none(userid: int, signature: str) -> None:
    """``none`` proves only the verifier's own userid."""
    real = os.getuid()
    if userid != real:
        raise SignError(f"sign-none-verify: header userid {userid} != real {real}")
    if signature != "none":
        raise SignError("sign-none-verify: signature invalid")


def _verify_munge(userid: int, J: str, end: int, max_ttl: float | None) -> float:  # noqa: N803
    """The time J's credential was made, once it proves ``userid`` signed ``J[:end]``."""
    import hashlib

    digest, uid, ctime = _munge_decode(J[end + 1 :])
    if digest[:1] != HASH_SHA256:
        raise SignError("sign-munge-verify: unknown hash type")
    expected = hashlib.sha256()
    for start in range(0, end, PIECE):  # ASCII: the header and payload decoded as base64url
        expected.update(J[start : min(start + PIECE, end)].encode())
    if digest[1:] != expected.digest():
        raise SignError("sign-munge-verify: SHA256 hash mismatch")
    if uid != userid:
        raise SignError("sign-munge-verify: uid mismatch")
    if max_ttl is not None and ctime + max_ttl < _now():
        raise SignError("sign-munge-verify: max-ttl exceeded")
    return ctime


#: the instance owner's bit of a rolemask (flux-core's FLUX_ROLE_OWNER)
ROLE_OWNER = 1


def client_signs(rolemask: int) -> bool:
    """Whether a client sends J signed under ``munge``: unless the instance takes it as
    its owner (``rolemask``, as a ping's answer gives it: root is the owner only where
    ``[access] allow-root-owner`` says so), whose jobspec job-ingest signs under ``none``."""
    return not rolemask & ROLE_OWNER


def munge_available() -> str | None:
    """None when libmunge loads and munged makes a credential; else why not."""
    try:
        _munge_encode(b"")
    except SignError as exc:
        return str(exc)
    return None


def _now() -> float:
    import time

    return time.time()


_heads: dict[tuple[str, int], bytes] = {}  # ``_head``'s, kept: job-ingest signs every job


def _head(mechanism: str, userid: int) -> bytes:
    """``base64url(HEADER).`` for ``mechanism`` and ``userid``."""
    head = _heads.get((mechanism, userid))
    if head is None:
        import json

        header = {"version": VERSION, "mechanism": mechanism, "userid": userid}
        head = _b64(json.dumps(header, separators=(",", ":")).encode()) + b"."
        if len(_heads) >= 1024:  # one a user: the oldest go first where there are many
            del _heads[next(iter(_heads))]
        _heads[mechanism, userid] = head
    return head


# ``_parse_header``'s, kept: a verifier reads the same few users' headers again and again
_parsed: dict[str, tuple[str, int]] = {}
_PARSED_SIZE = 128  # characters of a header kept, at most: a genuine one is about 70


def _parse_header(text: str, end: int) -> tuple[str, int]:
    """The mechanism and userid of J's HEADER, ``text`` (``end``: where its ``.`` was)."""
    if end < 0:
        raise SignError("sign-unwrap: header decode error: J is not HEADER.PAYLOAD.SIGNATURE")
    found = _parsed.get(text)
    if found is None:
        found = _read_header(text)
        if len(text) <= _PARSED_SIZE:
            if len(_parsed) >= 1024:  # the oldest go first where there are many
                del _parsed[next(iter(_parsed))]
            _parsed[text] = found
    return found


def _read_header(text: str) -> tuple[str, int]:
    import json

    try:
        header = json.loads(_unb64(text, 0, len(text), "header"))
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise SignError(f"sign-unwrap: header decode error: {exc}") from None
    if not isinstance(header, dict):
        raise SignError("sign-unwrap: header decode error: not a JSON object")
    version = header.get("version")
    if version is None:
        raise SignError("sign-unwrap: header version missing")
    if version != VERSION or type(version) is not int:
        raise SignError(f"sign-unwrap: header version={version!r} unknown")
    mechanism = header.get("mechanism")
    if mechanism is None:
        raise SignError("sign-unwrap: header mechanism missing")
    if mechanism not in MECHANISMS:
        shown = mechanism if isinstance(mechanism, str) else json.dumps(mechanism)
        raise SignError(f"sign-unwrap: header mechanism={shown} unknown")
    userid = header.get("userid")
    if userid is None:
        raise SignError("sign-unwrap: header userid missing")
    if type(userid) is not int or not 0 <= userid < 1 << 32:
        raise SignError(f"sign-unwrap: header userid={userid!r} is not a userid")
    return mechanism, userid


def _b64(data: bytes) -> bytes:
    """Unpadded base64url (RFC 4648 section 5)."""
    import binascii

    return binascii.b2a_base64(data, newline=False).translate(_URLSAFE).rstrip(b"=")


def _unb64(text: str, start: int, end: int, part: str) -> bytes:
    """``text[start:end]``, unpadded base64url, decoded; anything else is refused by ``part``."""
    import binascii

    try:
        data = text[start:end].encode("ascii")
    except UnicodeEncodeError:
        data = b"."  # not base64url either
    # what is left once every base64url character is taken out: nothing, if it is all
    if data.translate(None, _BASE64URL) or len(data) % 4 == 1:
        raise SignError(f"sign-unwrap: {part} decode error: not unpadded base64url")
    data = data.translate(_STANDARD)
    return binascii.a2b_base64(data + b"=" * (-len(data) % 4))


_munge: dict[str, Any] = {}  # "lib": libmunge's functions, "free": libc's free, once loaded


def _libmunge() -> tuple[Any, Any]:
    """libmunge's functions and libc's ``free``, loaded once, typed; SignError if MUNGE is
    not installed.

    Only ``munge_encode`` and ``munge_decode``, which wait for munged, let other threads
    run meanwhile (``CDLL``); the others are quick and keep the GIL (``PyDLL``): a thread
    that let go of it for each would win it back from a busy event loop each time, job-ingest's
    verifiers a forced switch of its loop's thread a call.
    """
    if not _munge:
        import ctypes
        from types import SimpleNamespace

        try:
            waits = ctypes.CDLL(LIBMUNGE)
            quick = ctypes.PyDLL(LIBMUNGE)
            libc = ctypes.PyDLL(None)
        except OSError:
            raise SignError(f"MUNGE is not installed ({LIBMUNGE} not found)") from None
        ptr, err, ctx = ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p
        lib = SimpleNamespace(
            munge_ctx_create=quick.munge_ctx_create,
            munge_ctx_destroy=quick.munge_ctx_destroy,
            munge_ctx_strerror=quick.munge_ctx_strerror,
            munge_ctx_get=quick.munge_ctx_get,
            munge_encode=waits.munge_encode,
            munge_decode=waits.munge_decode,
        )
        lib.munge_ctx_create.restype = ctx
        lib.munge_ctx_create.argtypes = []
        lib.munge_ctx_destroy.restype = None
        lib.munge_ctx_destroy.argtypes = [ctx]
        lib.munge_ctx_strerror.restype = ctypes.c_char_p
        lib.munge_ctx_strerror.argtypes = [ctx]
        lib.munge_encode.restype = err
        lib.munge_encode.argtypes = [ctypes.POINTER(ptr), ctx, ctypes.c_char_p, ctypes.c_int]
        lib.munge_decode.restype = err
        lib.munge_decode.argtypes = [
            ctypes.c_char_p,
            ctx,
            ctypes.POINTER(ptr),
            ctypes.POINTER(ctypes.c_int),
            ctypes.POINTER(ctypes.c_uint32),
            ctypes.POINTER(ctypes.c_uint32),
        ]
        lib.munge_ctx_get.restype = err
        lib.munge_ctx_get.argtypes = [ctx, ctypes.c_int, ptr]  # variadic: used with a pointer
        libc.free.restype = None
        libc.free.argtypes = [ptr]
        _munge.update(lib=lib, free=libc.free)
    return _munge["lib"], _munge["free"]


def _munge_error(lib: Any, ctx: Any) -> str:
    message = lib.munge_ctx_strerror(ctx)
    return message.decode(errors="replace") if message else "unknown error"


def _munge_encode(data: bytes) -> str:
    """A MUNGE credential holding ``data``, made by munged as this process's user."""
    import ctypes

    lib, free = _libmunge()
    ctx = lib.munge_ctx_create()
    if not ctx:
        raise SignError("sign-munge-sign: out of memory")
    cred = ctypes.c_void_p()
    try:
        e = lib.munge_encode(ctypes.byref(cred), ctx, data, len(data))
        if e == _EMUNGE_SOCKET:
            raise SignError(f"munged is not running: {_munge_error(lib, ctx)}")
        if e != _EMUNGE_SUCCESS:
            raise SignError(f"sign-munge-sign: {_munge_error(lib, ctx)}")
        return ctypes.string_at(cred).decode("ascii")
    finally:
        free(cred)
        lib.munge_ctx_destroy(ctx)


def _credential(signature: str, where: str) -> bytes:
    """``signature`` as the bytes of a MUNGE credential (``MUNGE:``, base64, ``:``), if it
    can be one; SignError, its message opening with ``where``, if not."""
    if len(signature) > MAX_CREDENTIAL:
        raise SignError(f"{where}: the credential is longer than {MAX_CREDENTIAL} characters")
    try:
        cred = signature.encode("ascii")
    except UnicodeEncodeError:
        raise SignError(f"{where}: the credential is not ASCII") from None
    if b"\0" in cred:
        raise SignError(f"{where}: the credential holds a NUL")
    if not (cred.startswith(b"MUNGE:") and cred.endswith(b":") and len(cred) > 7):
        raise SignError(f"{where}: not a MUNGE credential (MUNGE:...:)")
    return cred


def _munge_decode(signature: str) -> tuple[bytes, int, float]:
    """The payload, uid and encode time of the MUNGE credential ``signature``."""
    import ctypes

    cred = _credential(signature, "sign-munge-verify: munge_decode")
    lib, free = _libmunge()
    ctx = lib.munge_ctx_create()
    if not ctx:
        raise SignError("sign-munge-verify: out of memory")
    buf, size = ctypes.c_void_p(), ctypes.c_int()
    uid, gid, when = ctypes.c_uint32(), ctypes.c_uint32(), ctypes.c_long()
    try:
        e = lib.munge_decode(
            cred, ctx, ctypes.byref(buf), ctypes.byref(size), ctypes.byref(uid), ctypes.byref(gid)
        )
        # an expired or replayed credential is still authentic: the caller's max_ttl rules
        if e not in (_EMUNGE_SUCCESS, _EMUNGE_CRED_EXPIRED, _EMUNGE_CRED_REPLAYED):
            raise SignError(f"sign-munge-verify: munge_decode: {_munge_error(lib, ctx)}")
        e = lib.munge_ctx_get(ctx, _MUNGE_OPT_ENCODE_TIME, ctypes.byref(when))
        if e != _EMUNGE_SUCCESS:
            raise SignError(f"sign-munge-verify: encode time: {_munge_error(lib, ctx)}")
        payload = ctypes.string_at(buf.value, size.value) if buf.value else b""
        return payload, uid.value, float(when.value)
    finally:
        free(buf)
        lib.munge_ctx_destroy(ctx)
