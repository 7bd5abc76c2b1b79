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

from _pfluxcore import fluid

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Callable

_EMOJI_BASE = 576
ENCODINGS = ("dec", "hex", "dothex", "kvs", "words", "f58", "f58plain", "emoji")

_tables: dict[str, Any] = {}


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


def _emoji_encode(n: int) -> str:
    table = _emoji()[0]
    out = ""
    while True:
        n, rem = divmod(n, _EMOJI_BASE)
        out = table[rem] + out
        if not n:
            return out


_ENCODERS: dict[str, Callable[[int], str]] = {
    "dec": str,
    "hex": fluid.hex_,
    "dothex": fluid.dothex,
    "kvs": fluid.kvs,
    "words": fluid.words,
    "f58": lambda n: fluid.f58(n, _f58_prefix()),
    "f58plain": fluid.f58plain,
    "emoji": _emoji_encode,
}


def id_encode(jobid: int, encoding: str = "f58") -> str:
    """``jobid`` in ``encoding`` (one of ENCODINGS)."""
    n = int(jobid)
    if not 0 <= n <= fluid.ID_MAX:
        raise OSError(22, f"{n} is not a valid Flux jobid")
    encoder = _ENCODERS.get(encoding.lower())
    if encoder is None:
        raise OSError(
            22, f"unknown jobid encoding {encoding!r}: expected one of {', '.join(ENCODINGS)}"
        )
    return encoder(n)


def _invalid(text: str) -> OSError:
    return OSError(22, f"{text!r} is not a valid Flux jobid")


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
    rest = s[4:] if s.startswith("job.") else s
    if not rest:
        raise _invalid(text)
    try:
        # emoji has neither '.', '-' nor an f58 prefix: flux-core tries it after those
        value = _parse_emoji(text, rest) if rest[0] >= "\U0001f000" else fluid.decode(s)
    except ValueError:
        raise _invalid(text) from None
    if value > fluid.ID_MAX:  # emoji
        raise _invalid(text)
    return value


class JobID(int):
    """A job id: an ``int`` made from an int or any encoding's text (ValueError if
    invalid), with a property per encoding; ``str()`` is f58."""

    orig_str: str

    def __new__(cls, value: Any) -> JobID:
        if isinstance(value, JobID):
            return cls(value.orig_str)
        if isinstance(value, int) and not isinstance(value, bool):
            jobid = value
            if jobid > fluid.ID_MAX:  # flux-core's C encoder overflows on it (-1: the sentinel's)
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
