"""RFC 19 FLUIDs: encodings, parsing, and the generator."""

from __future__ import annotations

import itertools
import pickle
import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.errors import JobIDError
from pflux.spec.fluid import ENCODINGS, FluidGenerator, JobID, ascii_f58_preferred

ID_MAX = 2**64 - 1
ids = st.integers(min_value=0, max_value=ID_MAX)

# (id, dec, hex, dothex, words, f58): spec-notes' example plus flux-core's edge cases
EXAMPLES = [
    (
        6787342413402046,
        "6787342413402046",
        "0x181d0d4d850fbe",
        "0018.1d0d.4d85.0fbe",
        "cake-plume-nepal--neuron-pencil-academy",
        "ƒuzzybunny",
    ),
    (
        0,
        "0",
        "0x0",
        "0000.0000.0000.0000",
        "academy-academy-academy--academy-academy-academy",
        "ƒ1",
    ),
    (
        1,
        "1",
        "0x1",
        "0000.0000.0000.0001",
        "acrobat-academy-academy--academy-academy-academy",
        "ƒ2",
    ),
    (
        65535,
        "65535",
        "0xffff",
        "0000.0000.0000.ffff",
        "nevada-archive-academy--academy-academy-academy",
        "ƒLUv",
    ),
    (
        ID_MAX,
        "18446744073709551615",
        "0xffffffffffffffff",
        "ffff.ffff.ffff.ffff",
        "natural-analyze-verbal--natural-analyze-verbal",
        "ƒjpXCZedGfVQ",
    ),
]

# flux-core's f58 table (libutil/test/fluid.c)
F58 = [
    (0, "ƒ1"),
    (1, "ƒ2"),
    (57, "ƒz"),
    (1234, "ƒNH"),
    (1888, "ƒZZ"),
    (3363, "ƒzz"),
    (3364, "ƒ211"),
    (4369, "ƒ2JL"),
    (65535, "ƒLUv"),
    (4294967295, "ƒ7YXq9G"),
    (633528662, "ƒxyzzy"),
    (6731191091817518, "ƒuZZybuNNy"),
    (18446744073709551614, "ƒjpXCZedGfVP"),
    (18446744073709551615, "ƒjpXCZedGfVQ"),
]


Example = tuple[int, str, str, str, str, str]


@pytest.mark.parametrize("example", EXAMPLES)
def test_examples_encode(example: Example) -> None:
    n, dec, hex_, dothex, words, f58 = example
    j = JobID(n)
    assert (j.dec, j.hex, j.dothex, j.kvs, j.words, j.f58) == (
        dec,
        hex_,
        dothex,
        "job." + dothex,
        words,
        f58,
    )
    assert j.f58plain == "f" + f58[1:]
    assert str(j) == f"{j}" == f58
    assert repr(j) == f"JobID({n})"


@pytest.mark.parametrize("example", EXAMPLES)
def test_examples_decode(example: Example) -> None:
    n, dec, hex_, dothex, words, f58 = example
    for text in (dec, hex_, dothex, "job." + dothex, words, f58, "f" + f58[1:]):
        assert JobID.parse(text) == n
        assert JobID(text) == n


@pytest.mark.parametrize(("n", "f58"), F58)
def test_f58_table(n: int, f58: str) -> None:
    assert JobID(n).f58 == f58
    assert JobID.parse(f58) == n
    assert JobID.parse("f" + f58[1:]) == n


@pytest.mark.parametrize(
    ("text", "n"),
    [
        (" 0xffff   ", 65535),
        ("\t42\n", 42),
        ("0xFFFF", 65535),
        ("0.0.0.0", 0),
        ("0.0.0.0039", 57),
        ("a.b.c.d", 2814797012533261),
        ("1.2.3.4", 281483566841860),
        ("ABCD.0.0.0", 0xABCD << 48),
        ("job.1234", 1234),
        ("job.ƒNH", 1234),
        ("f111", 0),
        ("00042", 42),
        ("CAKE-Plume-nepal--neuron-pencil-academy", 6787342413402046),
    ],
)
def test_parse_variants(text: str, n: int) -> None:
    assert JobID.parse(text) == n


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("job.", "empty"),
        ("bar", "not in dec, hex"),
        ("boo", "not in dec, hex"),
        ("f", "base58 digits"),
        ("ƒ", "base58 digits"),
        ("f0", "'0' is not a base58 digit"),
        ("fO", "'O' is not a base58 digit"),
        ("fI", "'I' is not a base58 digit"),
        ("fl", "'l' is not a base58 digit"),
        ("flux", "'l' is not a base58 digit"),
        ("f1111111111111", "1 to 12 base58 digits"),
        ("fzzzzzzzzzzzz", "larger than 64 bits"),
        ("fjpXCZedGfVR", "larger than 64 bits"),
        ("-1", "w-w-w--w-w-w"),
        ("+5", "not in dec, hex"),
        ("1_000", "not in dec, hex"),
        ("١٢٣", "not in dec, hex"),
        ("12 34", "not in dec, hex"),
        ("0x", "hex digits"),
        ("0x-1", "w-w-w--w-w-w"),
        ("0xg", "hex digits"),
        ("0x_1", "hex digits"),
        ("0X10", "not in dec, hex"),
        ("0x10000000000000000", "larger than 64 bits"),
        ("18446744073709551616", "larger than 64 bits"),
        ("0.0.0", "four groups"),
        ("0.0.0.0.0", "four groups"),
        ("0.0.0.g", "1 to 4 hex digits"),
        ("0.0.0.", "1 to 4 hex digits"),
        (".0.0.0", "1 to 4 hex digits"),
        ("0.0.0.00000", "1 to 4 hex digits"),
        ("0.0.0.+1", "1 to 4 hex digits"),
        ("invalid-words-test", "w-w-w--w-w-w"),
        ("foo-bar-baz--qux-quux-corge", "'foo' is not a mnemonicode word"),
        ("a-a-a--a-a-a", "'a' is not a mnemonicode word"),
        ("academy-academy-academy-academy-academy-academy", "w-w-w--w-w-w"),
        ("academy-academy--academy-academy-academy", "w-w-w--w-w-w"),
        ("academy-academy-academy--academy-academy-academy--academy", "w-w-w--w-w-w"),
        ("academy-academy-yes--academy-academy-academy", "'yes' is not a mnemonicode word"),
        ("zoom-zoom-amen--academy-academy-academy", "more than 32 bits"),
        ("academy-academy-academy--academy-academy-", "'' is not a mnemonicode word"),
        ("😃", "not in dec, hex"),
    ],
)
def test_parse_rejects(text: str, reason: str) -> None:
    with pytest.raises(JobIDError) as info:
        JobID.parse(text)
    message = str(info.value)
    assert message.startswith(f"{text!r} is not a valid job id")
    assert reason in message


def test_parse_message_shortens_long_text() -> None:
    with pytest.raises(JobIDError) as info:
        JobID.parse("x" * 1000)
    assert len(str(info.value)) < 150


@pytest.mark.parametrize("value", [-1, 2**64, 1.0, True, None, b"1", [1]])
def test_constructor_rejects(value: object) -> None:
    with pytest.raises(JobIDError, match="is not a valid job id"):
        JobID(value)  # type: ignore[arg-type]


def test_parse_rejects_non_string() -> None:
    with pytest.raises(JobIDError, match="expected a string"):
        JobID.parse(b"123")  # type: ignore[arg-type]


def test_is_an_int() -> None:
    j = JobID(6787342413402046)
    assert isinstance(j, int)
    assert j == 6787342413402046
    assert hash(j) == hash(6787342413402046)
    assert {6787342413402046: "x"}[j] == "x"
    assert JobID(j) == j
    assert pickle.loads(pickle.dumps(j)) == j
    assert type(pickle.loads(pickle.dumps(j))) is JobID
    assert f"{j:d}" == "6787342413402046"
    assert not hasattr(j, "__dict__")


def test_fields() -> None:
    j = JobID(123 << 24 | 45 << 10 | 6)
    assert (j.timestamp, j.generator, j.sequence) == (123, 45, 6)
    top = JobID(ID_MAX)
    assert (top.timestamp, top.generator, top.sequence) == (2**40 - 1, 2**14 - 1, 2**10 - 1)


def test_encode_names() -> None:
    j = JobID(65535)
    assert [j.encode(f) for f in ENCODINGS] == [
        "65535",
        "0xffff",
        "0000.0000.0000.ffff",
        "job.0000.0000.0000.ffff",
        "nevada-archive-academy--academy-academy-academy",
        "ƒLUv",
        "fLUv",
    ]
    assert j.encode("F58") == "ƒLUv"
    assert j.encode("DotHex") == "0000.0000.0000.ffff"


@pytest.mark.parametrize("fmt", ["", "emoji", "base58", "decimal"])
def test_encode_unknown(fmt: str) -> None:
    with pytest.raises(JobIDError) as info:
        JobID(1).encode(fmt)
    assert repr(fmt) in str(info.value)
    assert "dec, hex, dothex, kvs, words, f58" in str(info.value)


def test_every_word_decodes_to_its_position() -> None:
    from _pfluxcore._wordlist import WORDS

    assert len(WORDS) == 1626
    assert len(set(WORDS)) == 1626
    for i, word in enumerate(WORDS):
        text = f"{word}-academy-academy--academy-academy-academy"
        assert JobID.parse(text) == i
        assert JobID(i).words == text


def test_import_does_not_load_the_wordlist() -> None:
    code = (
        "import sys, pflux.spec.fluid as f\n"
        "assert '_pfluxcore._wordlist' not in sys.modules\n"
        "assert 'typing' not in sys.modules\n"
        "f.JobID(1).f58\n"
        "assert '_pfluxcore._wordlist' not in sys.modules\n"
        "f.JobID(1).words\n"
        "assert '_pfluxcore._wordlist' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_f58_encodes_alike_before_and_after_its_pairs_table() -> None:
    """A command's first ids encode a digit per division (making the pairs table would cost
    it more), the many after them two at a time: the text is the same."""
    code = (
        "import random, pflux.spec.fluid\n"
        "from _pfluxcore import fluid as core\n"
        "rng = random.Random(1)\n"
        "ids = [0, 57, 58, 3363, 3364, 2**64 - 1, *(rng.getrandbits(64) for _ in range(50))]\n"
        "before = [core.f58(n) for n in ids]\n"
        "assert not core._B58_PAIRS\n"
        "for _ in range(64):\n"
        "    core.f58(1)\n"
        "after = [core.f58(n) for n in ids]\n"
        "assert core._B58_PAIRS\n"
        "assert before == after, [p for p in zip(before, after) if p[0] != p[1]]\n"
        "assert before[:6] == ['ƒ1', 'ƒz', 'ƒ21', 'ƒzz', 'ƒ211', 'ƒjpXCZedGfVQ']\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@settings(max_examples=300)
@given(ids)
def test_round_trip_every_encoding(n: int) -> None:
    j = JobID(n)
    for fmt in ENCODINGS:
        assert JobID.parse(j.encode(fmt)) == n
    assert JobID.parse(str(j)) == n
    assert JobID.parse(f"  {j.kvs}\n") == n


@settings(max_examples=300)
@given(ids)
def test_encodings_agree_with_int_formatting(n: int) -> None:
    j = JobID(n)
    assert j.dec == str(n)
    assert j.hex == hex(n)
    assert j.dothex.replace(".", "") == f"{n:016x}"
    assert len(j.f58) <= 12


def _parse_or_error(text: str) -> None:
    try:
        j = JobID.parse(text)
    except JobIDError:
        return
    assert 0 <= j <= ID_MAX
    assert type(j) is JobID


@settings(max_examples=400)
@given(st.text())
def test_fuzz_parse_text(text: str) -> None:
    _parse_or_error(text)


id_ish = st.text(alphabet="0123456789abcdefxABCDEFXƒfjob.- \tzZlOI", max_size=30)
word_ish = st.lists(
    st.sampled_from(["academy", "zoom", "amen", "yes", "cake", "", "x", "Academy", "-", "."]),
    max_size=8,
).map("-".join)


@settings(max_examples=400)
@given(st.one_of(id_ish, word_ish))
def test_fuzz_parse_idlike(text: str) -> None:
    _parse_or_error(text)


def reference_parse(text: str) -> int | None:
    """RFC 19's detection rules written plainly, as a model for ``JobID.parse``; None: reject."""
    from _pfluxcore._wordlist import WORDS

    s = text.strip()
    s = s.removeprefix("job.")
    hexdigits = "[0-9a-fA-F]"
    value: int | None = None
    if "." in s:
        if re.fullmatch(rf"{hexdigits}{{1,4}}(\.{hexdigits}{{1,4}}){{3}}", s):
            value = 0
            for group in s.split("."):
                value = value << 16 | int(group, 16)
    elif "-" in s:
        parts = s.lower().split("-")
        if (
            len(parts) == 7
            and not parts[3]
            and all(p in WORDS for i, p in enumerate(parts) if i != 3)
        ):
            n = [WORDS.index(p) for p in parts if p]
            lo, hi = n[0] + 1626 * n[1] + 1626**2 * n[2], n[3] + 1626 * n[4] + 1626**2 * n[5]
            value = hi << 32 | lo if lo < 2**32 and hi < 2**32 else None
    elif s[:1] in ("ƒ", "f"):
        if re.fullmatch("[1-9A-HJ-NP-Za-km-z]{1,12}", s[1:]):
            value = 0
            for c in s[1:]:
                value = value * 58 + B58.index(c)
    elif s.startswith("0x"):
        value = int(s[2:], 16) if re.fullmatch(f"{hexdigits}+", s[2:]) else None
    elif re.fullmatch("[0-9]+", s):
        value = int(s)
    return value if value is not None and value <= ID_MAX else None


B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def parsed(text: str) -> int | None:
    try:
        return JobID.parse(text)
    except JobIDError:
        return None


@settings(max_examples=500)
@given(st.one_of(id_ish, word_ish, ids.map(lambda n: JobID(n).f58), st.text(max_size=14)))
def test_parse_accepts_exactly_what_the_rules_accept(text: str) -> None:
    assert parsed(text) == reference_parse(text)


@settings(max_examples=300)
@given(ids, st.sampled_from(ENCODINGS), st.integers(0, 20), st.sampled_from(list(" \t\n.-xƒf0zOl")))
def test_parse_of_damaged_ids_follows_the_rules(n: int, fmt: str, at: int, c: str) -> None:
    text = JobID(n).encode(fmt)
    for damaged in (text[:at] + c + text[at:], text[:at] + c + text[at + 1 :], text[:at]):
        assert parsed(damaged) == reference_parse(damaged)


# -- the generator -------------------------------------------------------------------------


class FakeClock:
    """A clock in seconds that only moves when told to."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance_ms(self, ms: float) -> None:
        self.now += ms / 1000


def test_generator_counts_from_its_start() -> None:
    clock = FakeClock()
    gen = FluidGenerator(clock=clock)
    # timestamp 1 on a new instance, as flux-core: no job is ever id 0
    assert gen.next() == 1 << 24
    assert gen.next() == 1 << 24 | 1
    clock.advance_ms(5)
    j = gen.next()
    assert (j.timestamp, j.generator, j.sequence) == (6, 0, 0)
    assert gen.timestamp == 6


def test_generator_seq_overflow_moves_to_next_millisecond() -> None:
    clock = FakeClock()
    gen = FluidGenerator(7, clock=clock)
    first = [gen.next() for _ in range(1024)]
    assert [j.sequence for j in first] == list(range(1024))
    assert {j.timestamp for j in first} == {1}
    assert {j.generator for j in first} == {7}
    # the 1025th id in the same millisecond borrows the next one instead of waiting
    j = gen.next()
    assert (j.timestamp, j.sequence) == (2, 0)
    # the clock reaching the borrowed millisecond does not reset its sequence
    clock.advance_ms(1)
    assert (gen.next().timestamp, gen.next().sequence) == (2, 2)
    clock.advance_ms(1)
    j = gen.next()
    assert (j.timestamp, j.sequence) == (3, 0)
    assert first[-1] < j


def test_generator_ignores_a_clock_going_backwards() -> None:
    clock = FakeClock()
    gen = FluidGenerator(clock=clock)
    clock.advance_ms(10)
    a = gen.next()
    clock.advance_ms(-5)
    b = gen.next()
    assert b > a
    assert b.timestamp == a.timestamp == 11


def test_generator_restart_continues_after_largest_id() -> None:
    clock = FakeClock(50.0)
    gen = FluidGenerator(clock=clock)
    clock.advance_ms(3000)
    last = gen.next_many(5000)[-1]
    # a new instance whose monotonic clock starts lower than before
    gen2 = FluidGenerator(after=last, clock=FakeClock(1.0))
    j = gen2.next()
    assert j > last
    assert j.timestamp == last.timestamp + 1
    assert j.sequence == 0


def test_generator_after_zero_is_a_new_instance() -> None:
    assert FluidGenerator(after=0, clock=FakeClock()).next() == 1 << 24


@pytest.mark.parametrize("bad", [-1, 16384, True, 1.5, "1"])
def test_generator_id_range(bad: object) -> None:
    with pytest.raises(JobIDError, match=r"0\.\.16383"):
        FluidGenerator(bad)  # type: ignore[arg-type]


def test_generator_id_is_stamped() -> None:
    gen = FluidGenerator(16383, clock=FakeClock())
    assert gen.generator_id == 16383
    assert gen.next().generator == 16383


@pytest.mark.parametrize("bad", [-1, 2**64, "x"])
def test_generator_after_must_be_an_id(bad: object) -> None:
    with pytest.raises(JobIDError):
        FluidGenerator(after=bad)  # type: ignore[arg-type]


def test_generator_timestamp_overflow() -> None:
    with pytest.raises(JobIDError, match="overflow"):
        FluidGenerator(after=ID_MAX)
    gen = FluidGenerator(after=(2**40 - 2) << 24, clock=FakeClock())
    assert len(gen.next_many(1024)) == 1024
    with pytest.raises(JobIDError, match="overflow"):
        gen.next()
    with pytest.raises(JobIDError, match="overflow"):
        gen.next_many(1)


def test_generator_clock_overflow() -> None:
    clock = FakeClock()
    gen = FluidGenerator(clock=clock)
    clock.advance_ms(2**40)
    with pytest.raises(JobIDError, match="overflow"):
        gen.next()


def test_next_many_matches_next() -> None:
    clock_a, clock_b = FakeClock(), FakeClock()
    a = FluidGenerator(3, clock=clock_a)
    b = FluidGenerator(3, clock=clock_b)
    assert a.next_many(0) == []
    for n, step in [(10, 0), (2000, 1), (1, 0), (3000, 0), (5, 7)]:
        clock_a.advance_ms(step)
        clock_b.advance_ms(step)
        batch = a.next_many(n)
        assert batch == [b.next() for _ in range(n)]
        assert all(type(j) is JobID for j in batch)
    assert a.next() == b.next()


def test_generator_default_clock_is_monotonic() -> None:
    gen = FluidGenerator(1)
    got = [gen.next() for _ in range(3000)]
    assert got == sorted(set(got))


steps = st.lists(
    st.tuples(
        st.sampled_from(["next", "many", "restart"]),
        st.integers(min_value=-3, max_value=5),  # clock step in ms, sometimes backwards
        st.integers(min_value=0, max_value=2500),  # batch size
    ),
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(steps)
def test_generator_monotonic_across_bursts_and_restarts(plan: list[tuple[str, int, int]]) -> None:
    clock = FakeClock()
    gen = FluidGenerator(5, clock=clock)
    issued: list[JobID] = []
    for action, step, n in plan:
        clock.advance_ms(step)
        if action == "next":
            issued.append(gen.next())
        elif action == "many":
            issued.extend(gen.next_many(n))
        elif issued:
            clock = FakeClock(clock.now - 100)
            gen = FluidGenerator(5, after=max(issued), clock=clock)
    assert all(a < b for a, b in itertools.pairwise(issued))
    assert all(j.generator == 5 for j in issued)


def test_ascii_f58_preferred(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FLUX_F58_FORCE_ASCII", raising=False)
    monkeypatch.delenv("PFLUX_F58_FORCE_ASCII", raising=False)
    assert ascii_f58_preferred("utf-8") is False
    assert ascii_f58_preferred("UTF8") is False
    assert ascii_f58_preferred("ascii") is True
    assert ascii_f58_preferred("latin-1") is True
    assert ascii_f58_preferred("no-such-codec") is True
    assert ascii_f58_preferred("") is True
    monkeypatch.setenv("FLUX_F58_FORCE_ASCII", "1")
    assert ascii_f58_preferred("utf-8") is True
    monkeypatch.delenv("FLUX_F58_FORCE_ASCII")
    monkeypatch.setenv("PFLUX_F58_FORCE_ASCII", "1")
    assert ascii_f58_preferred("utf-8") is True


def test_ascii_f58_preferred_reads_stdout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FLUX_F58_FORCE_ASCII", raising=False)
    monkeypatch.delenv("PFLUX_F58_FORCE_ASCII", raising=False)

    class Stream:
        encoding = "ascii"

    monkeypatch.setattr(sys, "stdout", Stream())
    assert ascii_f58_preferred() is True
    Stream.encoding = "utf-8"
    assert ascii_f58_preferred() is False
