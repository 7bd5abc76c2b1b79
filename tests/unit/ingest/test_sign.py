"""J under the ``none`` mechanism: its payload is the jobspec's UTF-8 text, whole,
however it is cut into pieces to encode."""

from __future__ import annotations

import base64
from unittest import mock

import orjson
from hypothesis import given
from hypothesis import strategies as st

from pflux.ingest import sign
from pflux.ingest.sign import sign_none


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@given(st.text(), st.integers(0, 2**32 - 1), st.sampled_from([3, 6, 7, 3 << 16]))
def test_j_holds_the_text_and_the_userid(text: str, userid: int, piece: int) -> None:
    with mock.patch.object(sign, "PIECE", piece):
        signed = sign_none(userid, text)
    header, payload, signature = signed.split(".")
    assert orjson.loads(_unb64(header)) == {"version": 1, "mechanism": "none", "userid": userid}
    assert _unb64(payload) == text.encode()
    assert signature == "none"
    assert not set(signed) & set("=+/")  # base64url, unpadded
