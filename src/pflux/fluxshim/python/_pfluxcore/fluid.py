"""RFC 19 FLUID text encodings, for both pflux's ``JobID`` and the flux package's.

Encoders take an int in 0..2**64-1 and return text; ``decode`` takes stripped
text in any encoding, by flux-core's detection rules, and returns its value or
raises ``ValueError`` whose message is the reason, for each face to word as its
error.
Decoding runs on every command and RPC that names a job, so the common forms
(``ƒ`` f58 and decimal) are tried first with str methods and table look-ups,
and the mnemonicode word list loads only when words are used.
"""

from __future__ import annotations

ID_MAX = (1 << 64) - 1

B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_B58_VALUE = {c: i for i, c in enumerate(B58)}
# ASCII code -> digit value, 0xff for a character that is not a base58 digit
_NOT_B58 = 0xFF
_B58_CODES = bytes(_B58_VALUE.get(chr(code), _NOT_B58) for code in range(256))
# every two-digit base58 string, so encoding takes half as many divisions: made once
# enough ids were encoded to repay making it (3% of a short command's instructions)
_B58_PAIRS: list[str] = []
# ids left to encode a digit per division before the pairs are made
_UNPAIRED = [64]
F58_PREFIX = "\u0192"  # ƒ
F58_ASCII_PREFIX = "f"
F58_MAX_DIGITS = 12  # as flux-core: 11 digits cover 64 bits, one more allows a leading '1'

_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")
MN_BASE = 1626  # mnemonicode words; three of them cover 32 bits

# filled on first use: (words, word -> position)
_WORDLIST: list[tuple[tuple[str, ...], dict[str, int]]] = []


def wordlist() -> tuple[tuple[str, ...], dict[str, int]]:
    """The mnemonicode words and their positions, imported on first use only."""
    if not _WORDLIST:
        from ._wordlist import WORDS

        _WORDLIST.append((WORDS, {w: i for i, w in enumerate(WORDS)}))
    return _WORDLIST[0]


def f58(n: int, prefix: str = F58_PREFIX) -> str:
    """``prefix`` and base58: a digit per division for a command's few ids, then two
    (the pairs table) for the many of a listing."""
    pairs = _B58_PAIRS
    digits = ""
    if not pairs:
        if _UNPAIRED[0]:
            _UNPAIRED[0] -= 1
            while n >= 58:
                digits = B58[n % 58] + digits
                n //= 58
            return prefix + B58[n] + digits
        pairs.extend(a + b for a in B58 for b in B58)
    while n >= 3364:
        digits = pairs[n % 3364] + digits
        n //= 3364
    return prefix + (pairs[n] if n >= 58 else B58[n]) + digits


def f58plain(n: int) -> str:
    """Base58 after an ASCII ``f``."""
    return f58(n, F58_ASCII_PREFIX)


def hex_(n: int) -> str:
    """``0x`` and lower-case hex."""
    return f"{n:#x}"


def dothex(n: int) -> str:
    """Four dot-separated 16-bit groups of hex digits."""
    h = f"{n:016x}"
    return f"{h[:4]}.{h[4:8]}.{h[8:12]}.{h[12:]}"


def kvs(n: int) -> str:
    """The job's KVS directory (RFC 16): ``job.`` and dothex."""
    h = f"{n:016x}"
    return f"job.{h[:4]}.{h[4:8]}.{h[8:12]}.{h[12:]}"


def words(n: int) -> str:
    """Mnemonicode: three words for each 32-bit half, low half first."""
    table = wordlist()[0]
    lo = n & 0xFFFFFFFF
    hi = n >> 32
    return (
        f"{table[lo % MN_BASE]}-{table[lo // MN_BASE % MN_BASE]}-{table[lo // 2643876]}--"
        f"{table[hi % MN_BASE]}-{table[hi // MN_BASE % MN_BASE]}-{table[hi // 2643876]}"
    )


def decode(s: str) -> int:
    """The value of ``s`` (stripped text) in whichever encoding it is in.

    In flux-core's order, after a leading ``job.`` is dropped: a ``.`` means
    dothex, a ``-`` words, a leading ``ƒ``/``f`` f58, ``0x`` hex, and anything
    else must be decimal digits. ``ƒ`` f58 and decimal, the common cases, are
    tried first (neither can be mistaken for another encoding), and valid f58
    is decoded inline from bytes, which spares a call and a look-up per digit.
    """
    if s[:1] == F58_PREFIX:
        digits = s[1:].encode("ascii", "replace").translate(_B58_CODES)
        if not 1 <= len(digits) <= F58_MAX_DIGITS or _NOT_B58 in digits:
            _f58_decode(s)  # raises, naming what is wrong
        value = 0
        for digit in digits:
            value = value * 58 + digit
    elif s.isdigit() and s.isascii():
        value = int(s)
    else:
        value = _decode_by_form(s[4:] if s.startswith("job.") else s)
    if value > ID_MAX:
        raise ValueError("larger than 64 bits")
    return value


def _decode_by_form(s: str) -> int:
    """``s`` (without ``job.``) in the encoding its form names."""
    if "." in s:
        return _dothex_decode(s)
    if "-" in s:
        return _words_decode(s)
    if s.startswith((F58_PREFIX, F58_ASCII_PREFIX)):
        return _f58_decode(s)
    if s.startswith("0x"):
        digits_ = s[2:]
        if not digits_ or not _HEX_DIGITS.issuperset(digits_):
            raise ValueError("0x must be followed by hex digits")
        return int(digits_, 16)
    if s.isdigit() and s.isascii():
        return int(s)
    if not s:
        raise ValueError("empty")
    raise ValueError("not in dec, hex, dothex, kvs, words or f58 encoding")


def _dothex_decode(s: str) -> int:
    if len(s) == 19 and s[4] == s[9] == s[14] == ".":  # the canonical form, in one go
        digits = s[:4] + s[5:9] + s[10:14] + s[15:]
        if _HEX_DIGITS.issuperset(digits):
            return int(digits, 16)
    groups = s.split(".")
    if len(groups) != 4:
        raise ValueError("dothex needs four groups, e.g. 0018.1d0d.4d85.0fbe")
    value = 0
    for g in groups:
        if not 1 <= len(g) <= 4 or not _HEX_DIGITS.issuperset(g):
            raise ValueError("each dothex group must be 1 to 4 hex digits")
        value = value << 16 | int(g, 16)
    return value


def _words_decode(s: str) -> int:
    parts = s.split("-")
    # w-w-w--w-w-w splits into seven parts, the fourth empty
    if len(parts) != 7 or parts[3]:
        raise ValueError("words must have the form w-w-w--w-w-w")
    if not s.islower():
        parts = s.lower().split("-")
    index = wordlist()[1]
    try:
        lo = index[parts[0]] + MN_BASE * (index[parts[1]] + MN_BASE * index[parts[2]])
        hi = index[parts[4]] + MN_BASE * (index[parts[5]] + MN_BASE * index[parts[6]])
    except KeyError as exc:
        raise ValueError(f"{exc.args[0]!r} is not a mnemonicode word") from None
    if lo >> 32 or hi >> 32:
        triple = "-".join(parts[:3] if lo >> 32 else parts[4:])
        raise ValueError(f"{triple!r} encodes more than 32 bits")
    return hi << 32 | lo


def _f58_decode(s: str) -> int:
    digits = s[1:]
    if not 1 <= len(digits) <= F58_MAX_DIGITS:
        raise ValueError(f"f58 needs 1 to {F58_MAX_DIGITS} base58 digits after the prefix")
    table = _B58_VALUE
    value = 0
    try:
        for c in digits:
            value = value * 58 + table[c]
    except KeyError as exc:
        raise ValueError(f"{exc.args[0]!r} is not a base58 digit") from None
    return value
