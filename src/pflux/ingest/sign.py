"""J under RFC 15's ``none`` mechanism: what job-ingest writes as a job's signed request."""

from __future__ import annotations

import base64

import orjson


def sign_none(userid: int, payload: bytes) -> str:
    """J under the ``none`` mechanism: a userid-stamped, unsigned wrapper (RFC 15's shape)."""
    header = orjson.dumps({"version": 1, "mechanism": "none", "userid": userid})
    return f"{_b64(header)}.{_b64(payload)}.none"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
