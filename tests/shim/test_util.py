"""flux.util and flux.eventlog's formatter as flux-core's (t/python/t0024, t0033): durations,
dates, formatting, dotted dicts, argparse actions, and CLIMain's exit codes and messages."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.spec import duration
from support.shim import SHIM_PYTHON, run_flux


@pytest.fixture(scope="module")
def flux() -> Iterator[Any]:
    sys.path.insert(0, str(SHIM_PYTHON))
    try:
        importlib.import_module("flux.eventlog")
        yield importlib.import_module("flux.util")
    finally:
        sys.path.remove(str(SHIM_PYTHON))
        for name in [m for m in sys.modules if m == "flux" or m.startswith("flux.")]:
            del sys.modules[name]


def ts(*args: int) -> float:
    return datetime(*args).astimezone().timestamp()  # type: ignore[arg-type]


NOW = datetime(2021, 6, 10, 8, 0, 0)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("now", NOW.timestamp()),
        ("+1", NOW.timestamp() + 1),
        ("-1", NOW.timestamp() - 1),
        ("+1.5m", NOW.timestamp() + 90),
        ("+100ms", NOW.timestamp() + 0.1),
        ("6/10/2021 08:00", NOW.timestamp()),
        ("2021-06-10 08:00:00", NOW.timestamp()),
        ("Jun 10, 2021 8am", NOW.timestamp()),
        ("in 10 min", NOW.timestamp() + 600),
        ("tomorrow", ts(2021, 6, 11)),
        ("noon tomorrow", ts(2021, 6, 11, 12)),
        ("17:30", ts(2021, 6, 10, 17, 30)),
        ("last wed", ts(2021, 6, 9)),  # NOW is a Thursday
        ("next Wednesday 8pm", ts(2021, 6, 16, 20)),
        ("last thu", ts(2021, 6, 3)),
        ("last friday", ts(2021, 6, 4)),
        ("friday", ts(2021, 6, 11)),
        ("next friday", ts(2021, 6, 18)),
        ("next month", ts(2021, 7, 10)),  # not next Monday
        ("next week", ts(2021, 6, 17)),
        ("yesterday at 5pm", ts(2021, 6, 9, 17)),
        ("monday 9:30", ts(2021, 6, 14, 9, 30)),
        ("Dec 25", ts(2021, 12, 25)),
        ("2 hours ago", NOW.timestamp() - 7200),
        ("1 week from now", NOW.timestamp() + 604800),
    ],
)
def test_parse_datetime_reads_flux_cores_examples(flux: Any, text: str, expected: float) -> None:
    assert flux.parse_datetime(text, NOW).timestamp() == pytest.approx(expected)


@pytest.mark.parametrize("text", ["+1ns", "+1x", "+x", "-", "blursday", "6/45/2021", "25:00"])
def test_parse_datetime_refuses_what_is_no_date(flux: Any, text: str) -> None:
    with pytest.raises(ValueError, match=r"Invalid datetime|invalid Flux standard duration"):
        flux.parse_datetime(text, NOW)


@given(seconds=st.floats(0, 1e9, allow_nan=False))
def test_fsd_reads_back_as_pflux_reads_it(flux: Any, seconds: float) -> None:
    text = flux.fsd(seconds)
    assert flux.parse_fsd(text) == pytest.approx(duration.parse(text))
    assert flux.parse_fsd(text) == pytest.approx(seconds, rel=1e-3, abs=1e-3)


def test_fsd_and_parse_fsd_as_flux_core(flux: Any) -> None:
    assert [flux.fsd(s) for s in (0, 0.0005, 1.5, 30, 90, 7200, 86400 * 3, float("inf"))] == [
        "0s",
        "0s",
        "1.500s",
        "30s",
        "1.5m",
        "2h",
        "3d",
        "inf",
    ]
    assert flux.parse_fsd("1.5h") == 5400
    assert flux.parse_fsd("1.1h") == 3960  # timedelta's whole microseconds, not 1.1 * 3600
    assert flux.parse_fsd("INFINITY") == float("inf")
    for bad in ("-1", "1x", "", "nan"):
        with pytest.raises(ValueError, match="invalid Flux standard duration"):
            flux.parse_fsd(bad)


def test_util_datetime_and_formatter_conversions(flux: Any) -> None:
    zero = flux.UtilDatetime.fromtimestamp(0.0)
    when = flux.UtilDatetime(2021, 6, 10, 8, 0, 0)
    assert (f"{zero}", f"{zero:::h}", f"{zero:%FT%T::<6h}") == ("", "-", "-     ")
    assert (f"{when}", f"{when:%b%d %R::>12}") == ("2021-06-10T08:00:00", " Jun10 08:00")
    fmt = flux.UtilFormatter()
    assert fmt.format("{0!F}|{0!H}|{1!P}|{2:h}|{3:.5+}", 90, 0.256, "", "abcdef") == (
        "1.5m|0:01:30|25.6%|-|abcd+"
    )
    assert fmt.format("{0!d:%Y::>6}", ts(2021, 6, 10)) == "  2021"
    assert fmt.format("{0!F:h}", "") == "-"


def test_treedicts_and_dict_merge(flux: Any) -> None:
    tree: dict[str, Any] = {}
    flux.set_treedict(tree, "a.b.c", 42)
    flux.set_treedict(tree, "a.d", 1)
    assert flux.get_treedict(tree, "a.b.c") == 42
    assert flux.get_treedict(tree, "a.x.y", "none") == "none"
    flux.del_treedict(tree, "a.b.c", remove_empty=True)
    assert tree == {"a": {"d": 1}}
    with pytest.raises(KeyError):
        flux.del_treedict(tree, "a.b.c")
    assert flux.dict_merge({"a": {"b": 1, "c": 2}}, {"a": {"c": 3}, "d": 4}) == {
        "a": {"b": 1, "c": 3},
        "d": 4,
    }


def test_argparse_actions_and_help_formatter(flux: Any) -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="x", formatter_class=flux.help_formatter())
    parser.add_argument("-s", "--setattr", action=flux.TreedictAction, nargs="+", default={})
    parser.add_argument("--states", action=flux.FilterActionSetUpdate, default=set())
    parser.add_argument("--yes", action=flux.YesNoAction)
    parser.add_argument("--color", action=flux.ColorAction)
    parser.add_argument("-a", action=flux.FilterTrueAction)
    args = parser.parse_args(
        ["-s", "a.b=1", 'c="x"', "--states=run,sched", "--yes=no", "--color", "-a"]
    )
    assert args.setattr == {"a": {"b": 1}, "c": "x"}
    assert (args.states, args.yes, args.filtered, args.a) == ({"run", "sched"}, False, True, True)
    assert args.color == "always"
    assert args.color.enabled
    assert "    --states=STATES" in parser.format_help()
    assert "-s, --setattr=SETATTR [SETATTR ...]" in parser.format_help()


def test_payloads_and_topics_encode_as_flux_core(flux: Any) -> None:
    assert flux.encode_payload({"a": "é"}) == '{"a": "é"}'.encode()
    assert (flux.encode_payload("x"), flux.encode_payload(b"y")) == (b"x", b"y")
    assert flux.encode_payload(None) is None
    assert flux.encode_topic("a.b") == b"a.b"
    with pytest.raises(OSError, match="Topic must not be None/NULL"):
        flux.encode_topic(None)
    with pytest.raises(TypeError, match="Topic must be a string"):
        flux.encode_topic(5)


def test_climain_logs_the_error_and_keeps_exit_codes() -> None:
    code = """
        import errno, logging, sys
        from flux.util import CLIMain
        LOGGER = logging.getLogger("flux-thing")
        def main():
            if sys.argv[1:] == ["exit"]:
                sys.exit(3)
            raise OSError(errno.ENOENT, "No such file or directory", "/nowhere")
        CLIMain(LOGGER)(main)
        """
    proc = run_flux(code, None)
    assert proc.returncode == 1
    assert proc.stderr == "flux-thing: ERROR: No such file or directory: '/nowhere'\n"
    proc = run_flux(code.replace('sys.argv[1:] == ["exit"]', "True"), None)
    assert (proc.returncode, proc.stderr) == (3, "")


EVENTS = [
    {"timestamp": 1700000000.25, "name": "submit", "context": {"userid": 5, "urgency": 16}},
    {"timestamp": 1700000001.5, "name": "exception", "context": {"type": "cancel"}},
    {"timestamp": 1700000090.0, "name": "clean"},
]


def test_eventlog_formatter_formats_as_flux_core(flux: Any) -> None:
    formatter = sys.modules["flux.eventlog"].EventLogFormatter
    raw = formatter(color="never")
    assert [raw.format(e) for e in EVENTS] == [
        "1700000000.250000 submit userid=5 urgency=16",
        '1700000001.500000 exception type="cancel"',
        "1700000090.000000 clean",
    ]
    offset = formatter(timestamp_format="offset", color="never")
    assert [offset.format(e)[:15] for e in EVENTS] == [
        "       0.000000",
        "       1.250000",
        "      89.750000",
    ]
    human = formatter(timestamp_format="reltime", color="never")
    lines = [human.format(e) for e in EVENTS]
    first = datetime.fromtimestamp(EVENTS[0]["timestamp"]).strftime("%b%d %H:%M")  # type: ignore[arg-type]
    assert lines[0] == f"[{first}] submit userid=5 urgency=16"
    assert lines[1].startswith("[  +1.250000] exception")
    assert "+" not in lines[2].split("]")[0]
    color = formatter(color="always").format(EVENTS[1])
    assert color == (
        "\033[32m1700000001.500000\033[0m \033[1m\033[31mexception\033[0m"
        ' \033[34mtype\033[0m=\033[35m"cancel"\033[0m'
    )
    js = formatter(format="json").format(EVENTS[2])
    assert json.loads(js) == EVENTS[2]
    assert "context" not in js
    for kwargs, message in (
        ({"format": "yaml"}, "Invalid entry_fmt: yaml"),
        ({"timestamp_format": "x"}, "Invalid timestamp_fmt: x"),
        ({"color": "maybe"}, "Invalid color: maybe"),
    ):
        with pytest.raises(ValueError, match=message):
            formatter(**kwargs)


OUTPUT_FORMAT = """
    import json
    from flux.util import DisplayValue, OutputFormat

    class Item:
        def __init__(self, s="foo", i=42, f=1234.567, d=978336000.0):
            self.s, self.i, self.f, self.d = s, i, f, d
        def __repr__(self):
            return self.s

    H = {"s": "STRING", "i": "INTEGER", "f": "FLOAT", "d": "DATETIME"}
    out = {}
    for text in ("{s:<6} {i:>7d}", "a {s:<6} b{f:>8.2f} ", "sort:i,-d {i:>7d} {d!d:%b%d %R::^20}"):
        fmt = OutputFormat(text, headings=H)
        out[text] = [fmt.get_format(include_sort_prefix=False), fmt.header_format(),
                     sorted(fmt.fields), fmt.header(), fmt.format(Item()), fmt.get_format()]
    items = [Item("", 0, 2.2), Item("", 1, 1.1), Item("", 23456789, 1.0)]
    out["filter"] = [
        OutputFormat("?+:{i:>7} ?:{s:>6} ?:{f:8.2}", headings=H).filter(items),
        OutputFormat("?+:{i:>7} ?:{s:>6} ?+:{f:.2f}", headings=H).filter(items),
        OutputFormat("?+:{i:>7} ?:{s:>6} ?+:{f:.2f}", headings=H).filter(items, no_header=True),
    ]
    a, d, z = Item("a", 0, 2.2), Item("d", 33, 1.1), Item("z", 11, 1.0)
    fmt = OutputFormat("sort:i {s}:{i}:{f}", headings=H)
    out["sorted"] = [repr(fmt.sort_items([z, a, d]))]
    fmt.set_sort_keys("-s,,")
    out["sorted"].append(repr(fmt.sort_items([z, a, d])))
    out["mixed"] = repr(sorted(["x", "", 10, "5", None, "-"], key=DisplayValue))
    fmt.print_items([z, a, d])
    for bad in ("{nope}", "sort:nope {s}"):
        try:
            OutputFormat(bad, headings=H)
        except ValueError as exc:
            out[bad] = str(exc)
    print(json.dumps(out))
    """


def test_output_format_as_flux_cores_cases() -> None:
    import os

    os.environ["TZ"] = "UTC"
    try:
        proc = run_flux(OUTPUT_FORMAT, None)
    finally:
        del os.environ["TZ"]
    assert proc.returncode == 0, proc.stderr
    *printed, last = proc.stdout.splitlines()
    out = json.loads(last)
    assert out["{s:<6} {i:>7d}"] == [
        "{0.s:<6} {0.i:>7d}",
        "{s:<6} {i:>7}",
        ["i", "s"],
        "STRING INTEGER",
        "foo         42",
        "{0.s:<6} {0.i:>7d}",
    ]
    assert out["a {s:<6} b{f:>8.2f} "][3:5] == ["a STRING b   FLOAT ", "a foo    b 1234.57 "]
    assert out["sort:i,-d {i:>7d} {d!d:%b%d %R::^20}"][3:] == [
        "INTEGER       DATETIME      ",
        "     42     Jan01 08:00     ",
        "sort:i,-d {0.i:>7d} {0.d!d:%b%d %R::^20}",
    ]
    assert out["filter"] == ["{i:>8} {f:8.2}", "{i:>8} {f:5.2f}", "{i:>8} {f:3.2f}"]
    assert out["sorted"] == ["[a, z, d]", "[z, d, a]"]
    assert out["mixed"] == "['', None, '-', '5', 10, 'x']"  # unset first, in their order
    assert printed == ["STRING:INTEGER:FLOAT", "z:11:1.0", "d:33:1.1", "a:0:2.2"]
    assert out["{nope}"] == "Unknown format field: nope"
    assert out["sort:nope {s}"] == "Invalid sort key: nope"


TREE = """
    from flux.util import Deduplicator, OutputFormat, Tree

    root = Tree("root", combine_children=True)
    a = root.append("a")
    a.add("a1").add("a1x")
    a.add("a2")
    for _ in range(3):
        root.append("b", prefix="p")
    root.render(style="ascii")
    root.render(style="box", level=1, skip_root=True)

    class Item:
        def __init__(self, s, i):
            self.s, self.i = s, i

    def combine(kept, new):
        kept.i += new.i

    dedup = Deduplicator(OutputFormat("{s} {i}", headings={"s": "S", "i": "I"}), ["i"], combine)
    for item in (Item("x", 1), Item("y", 2), Item("x", 3)):
        dedup.append(item)
    print([(item.s, item.i) for item in dedup], [item.s for item in dedup])
    """


def test_tree_and_deduplicator_as_flux_core() -> None:
    proc = run_flux(TREE, None)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "root",
        "|-- a",
        "|   |-- a1",
        "|   |   `-- a1x",
        "|   `-- a2",
        "p `-- 3*[b]",
        "a",
        "├── a1",
        "└── a2",
        "p 3*[b]",
        "[('x', 4), ('y', 2)] ['x', 'y']",
    ]


CONFIG = """
    import os, sys
    from flux.util import UtilConfig

    class JobsConfig(UtilConfig):
        builtin_formats = {"default": {"format": "{id}"}}

        def validate(self, path, conf):
            if "formats" in conf:
                self.validate_formats(path, conf["formats"])

    config = JobsConfig("flux-jobs", initial_dict={"formats": JobsConfig.builtin_formats}).load()
    print(config.get_format_string("default"), config.get_format_string("mine"))
    print(config.get_format_string("{name}"), sorted(config.formats))
    os.environ["FLUX_JOBS_FORMAT_DEFAULT"] = "mine"
    print(config.get_format_string("default"))
    for name in ("nosuch", "get-config=mine"):
        try:
            config.get_format_string(name)
        except ValueError as exc:
            print(exc)
        except SystemExit:
            pass
    """


def test_util_config_merges_the_users_files_over_the_systems(tmp_path: Path) -> None:
    import os

    home, system = tmp_path / "home", tmp_path / "etc"
    (home / "flux").mkdir(parents=True)
    (system / "flux").mkdir(parents=True)
    (system / "flux" / "flux-jobs.json").write_text(
        '{"formats": {"mine": {"format": "{id} sys"}, "other": {"format": "{x}"}}}'
    )
    (home / "flux" / "flux-jobs.toml").write_text('[formats.mine]\nformat = "{id} {name}"\n')
    os.environ.update(XDG_CONFIG_HOME=str(home), XDG_CONFIG_DIRS=str(system))
    try:
        proc = run_flux(CONFIG, None)
        (home / "flux" / "flux-jobs.json").write_text('{"formats": {"default": {"format": "x"}}}')
        refused = run_flux(CONFIG, None)
    finally:
        del os.environ["XDG_CONFIG_HOME"], os.environ["XDG_CONFIG_DIRS"]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "{id} {id} {name}",
        "{name} ['default', 'mine', 'other']",
        "{id} {name}",
        "--format: No such format nosuch (Did you mean '{nosuch}'?)",
        "[formats.mine]",
        'format = "{id} {name}"',
    ]
    assert "override of builtin format 'default' not permitted" in refused.stderr
