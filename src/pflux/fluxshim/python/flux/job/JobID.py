"""``flux.job.JobID``: a job id (RFC 19 FLUID) that parses and prints every encoding.

The encodings: decimal, ``0x`` hex, dothex (``xxxx.xxxx.xxxx.xxxx``), kvs (dothex
after ``job.``), words (mnemonicode ``w-w-w--w-w-w``), f58 (base58 after ``ƒ``
or ``f``) and emoji (base 576). Text is recognised in flux-core's order: a ``.``
is dothex, a ``-`` words, an ``ƒ``/``f`` prefix f58, a leading 4-byte emoji
emoji, ``0x`` hex, and otherwise decimal. The word and emoji tables load only
when used.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_ID_MAX = (1 << 64) - 1
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_HEX = frozenset("0123456789abcdefABCDEF")
_MN_BASE = 1626
_EMOJI_BASE = 576
ENCODINGS = ("dec", "hex", "dothex", "kvs", "words", "f58", "f58plain", "emoji")

_tables: dict[str, Any] = {}


def _words() -> tuple[tuple[str, ...], dict[str, int]]:
    if "words" not in _tables:
        from flux.job._wordlist import WORDS

        _tables["words"] = (WORDS, {w: i for i, w in enumerate(WORDS)})
    words: tuple[tuple[str, ...], dict[str, int]] = _tables["words"]
    return words


def _emoji() -> tuple[str, dict[str, int]]:
    if "emoji" not in _tables:
        from flux.job._emoji import EMOJI

        table = "".join(EMOJI)
        _tables["emoji"] = (table, {e: i for i, e in enumerate(table)})
    emoji: tuple[str, dict[str, int]] = _tables["emoji"]
    return emoji


def _f58_prefix() -> str:
    """``ƒ``, or ``f`` where the locale cannot show it or FLUX_F58_FORCE_ASCII is set."""
    if "prefix" not in _tables:
        import locale

        try:
            utf8 = locale.nl_langinfo(locale.CODESET).upper().replace("-", "") == "UTF8"
        except (AttributeError, ValueError):
            utf8 = True
        ascii_only = not utf8 or bool(os.environ.get("FLUX_F58_FORCE_ASCII"))
        _tables["prefix"] = "f" if ascii_only else "\u0192"
    prefix: str = _tables["prefix"]
    return prefix


def _b58(n: int) -> str:
    digits = ""
    while True:
        n, rem = divmod(n, 58)
        digits = _B58[rem] + digits
        if not n:
            return digits


def _dothex(n: int) -> str:
    h = f"{n:016x}"
    return f"{h[:4]}.{h[4:8]}.{h[8:12]}.{h[12:]}"


def _words_encode(n: int) -> str:
    words = _words()[0]
    parts = []
    for half in (n & 0xFFFFFFFF, n >> 32):
        parts.append(
            f"{words[half % _MN_BASE]}-{words[half // _MN_BASE % _MN_BASE]}"
            f"-{words[half // (_MN_BASE * _MN_BASE)]}"
        )
    return "--".join(parts)


def _emoji_encode(n: int) -> str:
    table = _emoji()[0]
    out = ""
    while True:
        n, rem = divmod(n, _EMOJI_BASE)
        out = table[rem] + out
        if not n:
            return out


def id_encode(jobid: int, encoding: str = "f58") -> str:
    """``jobid`` in ``encoding`` (one of ENCODINGS)."""
    n = int(jobid)
    if not 0 <= n <= _ID_MAX:
        raise OSError(22, f"{n} is not a valid Flux jobid")
    enc = encoding.lower()
    if enc == "dec":
        return str(n)
    if enc == "hex":
        return f"{n:#x}"
    if enc == "dothex":
        return _dothex(n)
    if enc == "kvs":
        return "job." + _dothex(n)
    if enc == "words":
        return _words_encode(n)
    if enc == "f58":
        return _f58_prefix() + _b58(n)
    if enc == "f58plain":
        return "f" + _b58(n)
    if enc == "emoji":
        return _emoji_encode(n)
    raise OSError(
        22, f"unknown jobid encoding {encoding!r}: expected one of {', '.join(ENCODINGS)}"
    )


def _invalid(text: str) -> OSError:
    return OSError(22, f"{text!r} is not a valid Flux jobid")


def _parse_dothex(text: str, s: str) -> int:
    groups = s.split(".")
    if len(groups) != 4 or not all(1 <= len(g) <= 4 and _HEX.issuperset(g) for g in groups):
        raise _invalid(text)
    value = 0
    for g in groups:
        value = value << 16 | int(g, 16)
    return value


def _parse_words(text: str, s: str) -> int:
    parts = s.lower().split("-")
    if len(parts) != 7 or parts[3]:
        raise _invalid(text)
    index = _words()[1]
    try:
        lo, hi = (
            index[a] + _MN_BASE * (index[b] + _MN_BASE * index[c])
            for a, b, c in (parts[:3], parts[4:])
        )
    except KeyError:
        raise _invalid(text) from None
    if lo >> 32 or hi >> 32:
        raise _invalid(text)
    return hi << 32 | lo


def _parse_f58(text: str, digits: str) -> int:
    if not 1 <= len(digits) <= 12:
        raise _invalid(text)
    value = 0
    for c in digits:
        pos = _B58.find(c)
        if pos < 0:
            raise _invalid(text)
        value = value * 58 + pos
    return value


def _parse_emoji(text: str, s: str) -> int:
    index = _emoji()[1]
    value = 0
    for c in s:
        digit = index.get(c)
        if digit is None:
            raise _invalid(text)
        value = value * _EMOJI_BASE + digit
    return value


def id_parse(jobid_str: Any) -> int:
    """The job id ``jobid_str`` names, in any encoding (OSError EINVAL if none)."""
    if isinstance(jobid_str, bytes):
        jobid_str = jobid_str.decode("utf-8", "replace")
    if not isinstance(jobid_str, str):
        raise _invalid(str(jobid_str))
    text = jobid_str
    s = text.strip()
    if s.startswith("job."):
        s = s[4:]
    if not s:
        raise _invalid(text)
    value = _parse(text, s)
    if value > _ID_MAX:
        raise _invalid(text)
    return value


def _parse(text: str, s: str) -> int:
    """``s`` (``text`` stripped, without ``job.``) in the encoding its form says."""
    if "." in s:
        return _parse_dothex(text, s)
    if "-" in s:
        return _parse_words(text, s)
    if s[0] in ("f", "\u0192"):
        return _parse_f58(text, s[1:])
    if s[0] >= "\U0001f000":
        return _parse_emoji(text, s)
    if s.startswith("0x") and s[2:] and _HEX.issuperset(s[2:]):
        return int(s[2:], 16)
    if s.isdigit() and s.isascii():
        return int(s)
    raise _invalid(text)


class JobID(int):
    """A job id: an ``int`` made from an int or any encoding's text (ValueError if
    invalid), with a property per encoding; ``str()`` is f58."""

    orig_str: str

    def __new__(cls, value: Any) -> JobID:
        if isinstance(value, JobID):
            return cls(value.orig_str)
        if isinstance(value, int) and not isinstance(value, bool):
            jobid = value
            if jobid > _ID_MAX:  # flux-core's C encoder overflows on it (-1: the sentinel's)
                raise OverflowError(f"{value} is out of range for a Flux jobid (64 bits)")
        else:
            try:
                jobid = id_parse(value)
            except OSError:
                raise ValueError(f"{value} is not a valid Flux jobid") from None
        self = super().__new__(cls, jobid)
        self.orig_str = str(value)
        return self

    def encode(self, encoding: str = "dec") -> str:
        """This id in ``encoding``."""
        return id_encode(self, encoding)

    @property
    def dec(self) -> str:
        return str(int(self))

    @property
    def f58(self) -> str:
        return self.encode("f58")

    @property
    def f58plain(self) -> str:
        return self.encode("f58plain")

    @property
    def hex(self) -> str:
        return self.encode("hex")

    @property
    def dothex(self) -> str:
        return self.encode("dothex")

    @property
    def words(self) -> str:
        return self.encode("words")

    @property
    def emoji(self) -> str:
        return self.encode("emoji")

    @property
    def kvs(self) -> str:
        return self.encode("kvs")

    @property
    def orig(self) -> str:
        """The text (or number) this id was made from."""
        return self.orig_str

    def __str__(self) -> str:
        return self.encode("f58")

    def __repr__(self) -> str:
        return f"JobID({self.dec})"
