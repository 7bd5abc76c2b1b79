"""Compact JSON for the wire and the eventlogs, from orjson or the standard library.

orjson is several times faster a call, and a service makes thousands of calls a
second; but importing it costs about 25 ms (it loads dataclasses, uuid, inspect
and more), more than the whole work of a short command. So each process picks
once: orjson, loaded on first use, unless ``use_stdlib()`` came first, as the
command line does (``pflux start`` turns to orjson for the broker it runs, with
``use_orjson()``); the standard library's codec is its C accelerator without the
json package (``jsonlean``). Both write the same bytes for what pflux sends: compact
UTF-8, keys in the order given. Where they differ, on what JSON cannot hold:
a NaN is refused by the standard library and written as null by orjson; a lone
surrogate and an object of another type are refused by both (``EncodeError``).

Callers use the module's names at call time (``jsontext.loads(...)``), never a
copy taken at import, since the first call puts the chosen codec in their place.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Protocol

    class _Dumps(Protocol):
        def __call__(
            self,
            obj: Any,
            /,
            *,
            default: Callable[[Any], Any] | None = ...,
            newline: bool = ...,
            sort_keys: bool = ...,
        ) -> bytes: ...


__all__ = ["DecodeError", "EncodeError", "dumps", "loads", "use_orjson", "use_stdlib"]

#: what decoding bad JSON raises, from either codec (both raise a ValueError)
DecodeError = ValueError
#: what encoding a value JSON cannot hold raises, from either codec
EncodeError = (TypeError, ValueError)


def _first_dumps(
    obj: Any,
    /,
    *,
    default: Callable[[Any], Any] | None = None,
    newline: bool = False,
    sort_keys: bool = False,
) -> bytes:
    """``obj`` as compact UTF-8 JSON; ``default`` converts what JSON has no type for,
    ``newline`` ends it with one, ``sort_keys`` orders every object's keys."""
    _choose(stdlib=False)
    return dumps(obj, default=default, newline=newline, sort_keys=sort_keys)


def _first_loads(data: bytes | bytearray | memoryview | str, /) -> Any:
    """The value of one JSON text; DecodeError if it is not one."""
    _choose(stdlib=False)
    return loads(data)


dumps: _Dumps = _first_dumps
loads: Callable[[bytes | bytearray | memoryview | str], Any] = _first_loads


def use_stdlib() -> None:
    """Use the standard library's json in this process from now on."""
    _choose(stdlib=True)


def use_orjson() -> None:
    """Use orjson in this process from now on (a broker started by a command)."""
    _choose(stdlib=False)


def _choose(*, stdlib: bool) -> None:
    """Put the chosen codec's functions in place of this module's."""
    global dumps, loads
    if not stdlib:
        try:
            import orjson
        except ImportError:  # pragma: no cover - a dependency; the stdlib still serves
            stdlib = True
    if stdlib:
        from pflux.spec import jsonlean

        decode = jsonlean.loads
        encode = jsonlean.dumps_text

        def std_dumps(
            obj: Any,
            /,
            *,
            default: Callable[[Any], Any] | None = None,
            newline: bool = False,
            sort_keys: bool = False,
        ) -> bytes:
            text = encode(obj, default=default, sort_keys=sort_keys)
            return (text + "\n" if newline else text).encode()

        def std_loads(data: bytes | bytearray | memoryview | str, /) -> Any:
            return decode(bytes(data) if isinstance(data, memoryview) else data)

        dumps, loads = std_dumps, std_loads
        return

    fast_loads = orjson.loads
    fast_dumps = orjson.dumps
    newline_option = orjson.OPT_APPEND_NEWLINE
    sorted_option = orjson.OPT_SORT_KEYS

    def orjson_dumps(
        obj: Any,
        /,
        *,
        default: Callable[[Any], Any] | None = None,
        newline: bool = False,
        sort_keys: bool = False,
    ) -> bytes:
        option = (newline_option if newline else 0) | (sorted_option if sort_keys else 0)
        return fast_dumps(obj, default=default, option=option)

    dumps, loads = orjson_dumps, fast_loads
