"""RFC 19 FLUIDs: job ids, their text encodings, and the generator that issues them.

A FLUID is 64 bits: a 40-bit timestamp (milliseconds since the generator's own
epoch), a 14-bit generator id and a 10-bit sequence number. Ids print in any of
six encodings (dec, hex, dothex, kvs, words, f58) and every pflux command must
accept all of them, so decoding is on the hot path of every CLI call and every
RPC that names a job. The encodings themselves are ``_pfluxcore.fluid``'s, which
the flux package's ``JobID`` shares; this module words its refusals as
``JobIDError`` and issues ids.
"""

from __future__ import annotations

import os
import sys
import time

from _pfluxcore.fluid import F58_PREFIX as _F58_PREFIX
from _pfluxcore.fluid import decode as _decode
from _pfluxcore.fluid import dothex as _dothex
from _pfluxcore.fluid import f58 as _f58
from _pfluxcore.fluid import f58plain as _f58plain
from _pfluxcore.fluid import kvs as _kvs
from _pfluxcore.fluid import words as _words_encode

from pflux.errors import JobIDError

TYPE_CHECKING = False  # as typing.TYPE_CHECKING, without importing typing (several ms)
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["ENCODINGS", "JOBID_ANY", "FluidGenerator", "JobID", "ascii_f58_preferred"]

_TS_BITS = 40
_GEN_BITS = 14
_SEQ_BITS = 10
_SEQ_MAX = (1 << _SEQ_BITS) - 1
_GEN_MAX = (1 << _GEN_BITS) - 1
_ID_MAX = (1 << 64) - 1
JOBID_ANY = _ID_MAX  # FLUX_JOBID_ANY: no job id, "any job" (job wait)

#: The names ``JobID.encode`` and ``pflux job id --to`` accept.
ENCODINGS = ("dec", "hex", "dothex", "kvs", "words", "f58", "f58plain")


_new = int.__new__


def _invalid(text: str, reason: str) -> JobIDError:
    shown = text if len(text) <= 64 else text[:60] + "..."
    return JobIDError(f"{shown!r} is not a valid job id: {reason}")


class JobID(int):
    """A job id: an ``int`` that parses and prints every RFC 19 encoding.

    ``JobID(n)`` checks that n fits in 64 unsigned bits; ``JobID(text)`` is
    ``JobID.parse(text)``. ``str()`` (and an f-string) gives f58, as flux does.
    """

    __slots__ = ()

    def __new__(cls, value: int | str) -> JobID:
        if isinstance(value, str):
            return cls.parse(value)
        if not isinstance(value, int) or isinstance(value, bool):
            raise JobIDError(f"{value!r} is not a valid job id: expected an int or a string")
        if not 0 <= value <= _ID_MAX:
            raise JobIDError(f"{int(value)} is not a valid job id: outside 0..2**64-1")
        return int.__new__(cls, value)

    @classmethod
    def parse(cls, text: str) -> JobID:
        """Decode ``text`` in whichever encoding it is in (RFC 19's detection rules).

        Surrounding whitespace and a leading ``job.`` are ignored, then, in
        flux-core's order: a ``.`` means dothex, a ``-`` words, a leading
        ``ƒ``/``f`` f58, ``0x`` hex, and anything else must be decimal digits.
        """
        if not isinstance(text, str):
            raise JobIDError(f"{text!r} is not a valid job id: expected a string")
        try:
            return _new(cls, _decode(text.strip()))
        except ValueError as exc:
            raise _invalid(text, str(exc)) from None

    def encode(self, fmt: str) -> str:
        """This id in encoding ``fmt`` (one of ``ENCODINGS``, any case)."""
        encoder = _ENCODERS.get(fmt) or _ENCODERS.get(fmt.lower())
        if encoder is None:
            raise JobIDError(
                f"unknown job id encoding {fmt!r}: expected one of {', '.join(ENCODINGS)}"
            )
        return encoder(self)

    @property
    def dec(self) -> str:
        """Decimal, e.g. ``6787342413402046``."""
        return int.__repr__(self)

    @property
    def hex(self) -> str:
        """``0x`` and lower-case hex, e.g. ``0x181d0d4d850fbe``."""
        return f"{self:#x}"

    @property
    def dothex(self) -> str:
        """Four dot-separated 16-bit groups, e.g. ``0018.1d0d.4d85.0fbe``."""
        return _dothex(self)

    @property
    def kvs(self) -> str:
        """The job's KVS directory (RFC 16), e.g. ``job.0018.1d0d.4d85.0fbe``."""
        return _kvs(self)

    @property
    def words(self) -> str:
        """Mnemonicode, e.g. ``cake-plume-nepal--neuron-pencil-academy``."""
        return _words_encode(self)

    @property
    def f58(self) -> str:
        """Base58 after ``ƒ``, e.g. ``ƒLUv``: what pflux prints by default."""
        return _f58(self)

    @property
    def f58plain(self) -> str:
        """Base58 after an ASCII ``f``, for output that cannot carry ``ƒ``."""
        return _f58plain(self)

    @property
    def timestamp(self) -> int:
        """Milliseconds since the issuing generator's epoch (the top 40 bits)."""
        return self >> (_GEN_BITS + _SEQ_BITS)

    @property
    def generator(self) -> int:
        """The id of the generator that issued this id (14 bits)."""
        return (self >> _SEQ_BITS) & _GEN_MAX

    @property
    def sequence(self) -> int:
        """The sequence number within its millisecond (10 bits)."""
        return self & _SEQ_MAX

    def __str__(self) -> str:
        """f58, with ``ƒ`` unless ``ascii_prefix(True)`` (the CLI, where ``ƒ`` cannot show)."""
        return _f58plain(self) if _ascii_prefix else _f58(self)

    def __repr__(self) -> str:
        return f"JobID({int.__repr__(self)})"


_ENCODERS: dict[str, Callable[[JobID], str]] = {
    "dec": int.__repr__,
    "hex": lambda n: f"{n:#x}",
    "dothex": _dothex,
    "kvs": _kvs,
    "words": _words_encode,
    "f58": _f58,
    "f58plain": _f58plain,
}


_ascii_prefix = False  # what str(JobID) prints: see ascii_prefix


def ascii_prefix(on: bool) -> None:
    """Make ``str(JobID)`` print ``f`` instead of ``ƒ`` (``on``) or not, process-wide."""
    global _ascii_prefix  # noqa: PLW0603 - one switch, set once by the CLI's entry point
    _ascii_prefix = on


def ascii_f58_preferred(encoding: str | None = None) -> bool:
    """Whether to print f58 with ``f`` rather than ``ƒ``.

    flux-core prints ``f`` when the locale is not UTF-8 or when
    ``FLUX_F58_FORCE_ASCII`` is set. pflux honours that variable (and
    ``PFLUX_F58_FORCE_ASCII``) and otherwise asks whether the output encoding
    (``sys.stdout``'s unless given) can carry ``ƒ`` at all. For stdout, a C
    or POSIX locale (``LC_ALL=C``) counts as not UTF-8 although Python then
    writes UTF-8 (its UTF-8 mode, which such a locale turns on): flux prints
    ``f`` there. ``PYTHONIOENCODING`` or ``PYTHONUTF8=1``, set on purpose, win.
    """
    if os.environ.get("FLUX_F58_FORCE_ASCII") or os.environ.get("PFLUX_F58_FORCE_ASCII"):
        return True
    if encoding is None:
        if (
            sys.flags.utf8_mode
            and not os.environ.get("PYTHONUTF8")
            and not os.environ.get("PYTHONIOENCODING")
        ):
            return True  # the locale is C or POSIX
        encoding = getattr(sys.stdout, "encoding", None)
    if not encoding:
        return True
    try:
        _F58_PREFIX.encode(encoding)
    except (LookupError, UnicodeError):
        return True
    return False


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class FluidGenerator:
    """Issues strictly increasing FLUIDs for one generator id.

    As in flux-core, the timestamp counts milliseconds of a monotonic clock
    from the generator's start, offset so that a generator built with
    ``after=largest_id_ever_issued`` starts one millisecond past that id's
    timestamp: ids never repeat or go backwards across restarts, and wall-clock
    steps cannot disturb them. Without ``after`` (a new instance) it starts at
    timestamp 1, as flux-core's job-ingest does, so no job is ever id 0.

    When 1024 ids have been issued in one millisecond, flux-core busy-waits for
    the next. This generator instead moves its timestamp one millisecond ahead
    of the clock and carries on, so a burst never blocks the event loop; it runs
    ahead by at most burst/1024 ms and the clock catches up once the burst ends.
    Not thread-safe: one generator belongs to one job-ingest.
    """

    __slots__ = ("_bits", "_generator_id", "_now", "_offset", "_seq", "_timestamp", "_zero")

    def __init__(
        self,
        generator_id: int = 0,
        *,
        after: int | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if (
            not isinstance(generator_id, int)
            or isinstance(generator_id, bool)
            or not 0 <= generator_id <= _GEN_MAX
        ):
            raise JobIDError(f"FLUID generator id must be an int in 0..{_GEN_MAX}")
        start = JobID(0 if after is None else after).timestamp + 1
        if start >> _TS_BITS:
            raise JobIDError(f"FLUID timestamp overflow: no ids remain after {after}")
        self._generator_id = generator_id
        self._bits = generator_id << _SEQ_BITS
        if clock is None:
            self._now = _monotonic_ms
        else:
            read = clock
            self._now = lambda: int(read() * 1000 // 1)
        self._zero = self._now()
        self._offset = start
        self._timestamp = start
        self._seq = 0

    @property
    def generator_id(self) -> int:
        """The 14-bit generator id stamped into every id issued."""
        return self._generator_id

    @property
    def timestamp(self) -> int:
        """The timestamp of the latest id issued (before the first, the starting one)."""
        return self._timestamp

    def next(self) -> JobID:
        """The next id, greater than every id this generator issued before."""
        now = self._now() - self._zero + self._offset
        if now > self._timestamp:
            self._timestamp = now
            self._seq = 0
        elif self._seq > _SEQ_MAX:
            self._timestamp += 1
            self._seq = 0
        ts = self._timestamp
        if ts >> _TS_BITS:
            raise JobIDError("FLUID timestamp overflow: the 40-bit millisecond count is spent")
        seq = self._seq
        self._seq = seq + 1
        return int.__new__(JobID, ts << 24 | self._bits | seq)

    def next_many(self, n: int) -> list[JobID]:
        """``n`` consecutive ids at once, for batched ingest; same guarantees as ``next``."""
        now = self._now() - self._zero + self._offset
        ts, seq = self._timestamp, self._seq
        if now > ts:
            ts, seq = now, 0
        out: list[JobID] = []
        new = int.__new__
        while n > 0:
            if seq > _SEQ_MAX:
                ts, seq = ts + 1, 0
            if ts >> _TS_BITS:
                raise JobIDError("FLUID timestamp overflow: the 40-bit millisecond count is spent")
            take = min(n, _SEQ_MAX + 1 - seq)
            base = ts << 24 | self._bits
            out.extend([new(JobID, i) for i in range(base + seq, base + seq + take)])
            seq += take
            n -= take
        self._timestamp, self._seq = ts, seq
        return out
