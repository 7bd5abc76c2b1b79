"""The C accelerator's codec gives json.loads's and json.dumps's values, bytes and errors."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pflux.spec import jsonlean, jsontext

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()  # NaN and the infinities too, which both refuse
    | st.text()  # lone surrogates too, which UTF-8 cannot hold
)
keys = st.text() | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=12,
)


def _outcome(call: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    """A call's value (as its repr, so that NaN equals NaN), or its error's type and text."""
    try:
        return "value", repr(call(*args, **kwargs))
    except Exception as exc:
        return type(exc).__name__, str(exc)


def _stdlib_dumps(value: Any, *, sort_keys: bool = False, default: Any = None) -> bytes:
    return json.dumps(
        value,
        separators=(",", ":"),
        ensure_ascii=False,
        allow_nan=False,
        sort_keys=sort_keys,
        default=default,
    ).encode()


def _lean_dumps(value: Any, *, sort_keys: bool = False, default: Any = None) -> bytes:
    return jsonlean.dumps_text(value, sort_keys=sort_keys, default=default).encode()


@settings(max_examples=400, deadline=None)
@given(values, st.booleans())
def test_dumps_writes_the_stdlibs_bytes_or_raises_its_error(value: Any, sort_keys: bool) -> None:
    assert _outcome(_lean_dumps, value, sort_keys=sort_keys) == _outcome(
        _stdlib_dumps, value, sort_keys=sort_keys
    )


def test_dumps_uses_default_and_refuses_what_it_cannot_write() -> None:
    value = {"a": {1, 2}, "b": (1, "é")}
    assert _lean_dumps(value, default=sorted) == _stdlib_dumps(value, default=sorted)
    assert _outcome(_lean_dumps, value) == _outcome(_stdlib_dumps, value)
    assert _outcome(_lean_dumps, value)[1] == "Object of type set is not JSON serializable"
    assert _outcome(_lean_dumps, [float("nan")])[0] == "ValueError"
    with pytest.raises(jsontext.EncodeError):
        _lean_dumps("\ud800")
    circular: list[Any] = []
    circular.append(circular)
    assert _outcome(_lean_dumps, circular) == _outcome(_stdlib_dumps, circular)


def _texts() -> st.SearchStrategy[str]:
    written = values.map(lambda value: json.dumps(value, allow_nan=True))
    noisy = st.builds(
        lambda text, cut, extra: text[:cut] + extra,
        written,
        st.integers(0, 40),
        st.sampled_from(["", " ", "\n\t", "x", "]", "}", ",", "  1", "\ufeff", "NaN", "\\"]),
    )
    return written | noisy | st.text(alphabet=' \t\n[]{}",:0123456789.eE+-tfnulraINy\\\ufeff')


@settings(max_examples=600, deadline=None)
@given(_texts(), st.sampled_from(["str", "utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-32"]))
def test_loads_reads_what_the_stdlib_reads_and_fails_as_it_does(text: str, form: str) -> None:
    data: str | bytes = text
    if form != "str":
        try:
            data = text.encode(form, "surrogatepass")
        except UnicodeError:
            return
    assert _outcome(jsonlean.loads, data) == _outcome(json.loads, data)


@pytest.mark.parametrize("data", ["", " ", "[1] [2]", "\ufeff[]", b"\xff", "[1,]", "{'a': 1}", 5])
def test_loads_errors(data: Any) -> None:
    lean = _outcome(jsonlean.loads, data)
    assert lean == _outcome(json.loads, data)
    assert lean[0] != "value"


def test_the_command_lines_codec_is_the_lean_one_and_writes_json_dumps_bytes() -> None:
    jsontext.use_stdlib()  # the fixture of tests/conftest.py puts back the codec in use
    value = {"id": 1, "name": "é\n", "f": 0.1, "list": [None, True]}
    assert jsontext.dumps(value, newline=True) == _stdlib_dumps(value) + b"\n"
    assert jsontext.loads(memoryview(b'{"a":[1]}')) == {"a": [1]}
    with pytest.raises(jsontext.DecodeError):
        jsontext.loads(b"{")


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON data")


def _value_or_none(text: str) -> Any:
    try:
        return json.loads(text, parse_constant=_refuse)
    except ValueError:
        return None


@settings(max_examples=400, deadline=None)
@given(_texts())
def test_value_or_is_json_loads_refusing_the_constants(text: str) -> None:
    assert repr(jsonlean.value_or(text, None)) == repr(_value_or_none(text))


def test_errors_are_json_s_where_the_json_package_is_not_loaded() -> None:
    """A command loads no json: the scanner's own errors (inside a text) still come as
    json's JSONDecodeError, and a ``-o KEY=VALUE`` that is not JSON is text."""
    probe = (
        "import sys\n"
        "from pflux.spec import jsonlean\n"
        "assert jsonlean.value_or('{\"a\" 1}', 'text') == 'text'\n"
        "assert 'json' not in sys.modules\n"
        "for bad in ('\"abc', '{\"a\" 1}', '[1,', '[1] x'):\n"
        "    try:\n"
        "        jsonlean.loads(bad)\n"
        "    except ValueError as exc:\n"
        "        print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    expected = []
    for bad in ('"abc', '{"a" 1}', "[1,", "[1] x"):
        try:
            json.loads(bad)
        except ValueError as exc:
            expected.append(f"{type(exc).__name__} {exc}")
    assert done.stdout.splitlines() == expected
