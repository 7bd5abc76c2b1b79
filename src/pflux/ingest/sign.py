"""J under RFC 15's ``none`` mechanism: what job-ingest writes as a job's signed request.

A jobspec may be megabytes long: J is encoded from its text a piece at a time
and grown in place, so encoding holds J and one piece, never the whole
payload's bytes or base64 as well.
"""

from __future__ import annotations

import binascii

import orjson

PIECE = 3 << 16  # characters of the payload encoded at a time
_URLSAFE = bytes.maketrans(b"+/", b"-_")


def sign_none(userid: int, payload: str) -> str:
    """J under the ``none`` mechanism: a userid-stamped, unsigned wrapper (RFC 15's shape)."""
    header = orjson.dumps({"version": 1, "mechanism": "none", "userid": userid})
    signed = _b64(header) + "."
    carry = b""  # the last bytes short of 3, encoded with the next piece
    for start in range(0, len(payload), PIECE):
        data = carry + payload[start : start + PIECE].encode()
        whole = len(data) - len(data) % 3
        signed += _b64(data[:whole])  # grows in place: ``signed`` is its only reference
        carry = data[whole:]
    signed += _b64(carry)
    signed += ".none"
    return signed


def _b64(data: bytes) -> str:
    """Unpadded base64url (RFC 4648 section 5)."""
    return binascii.b2a_base64(data, newline=False).translate(_URLSAFE).rstrip(b"=").decode()
