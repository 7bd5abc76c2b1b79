"""RFC 25 jobspec version 1: decode JSON or YAML, validate, encode.

JSON goes through ``pflux.spec.jsontext``, and PyYAML is imported on first use,
so that importing the jobspec modules costs next to nothing.
"""

from __future__ import annotations

from pflux.errors import JobspecError
from pflux.spec import jsontext
from pflux.spec.jobspec.accept import accepts
from pflux.spec.jobspec.view import JobspecView
from pflux.spec.jobspec.walker import raise_problems

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Literal

    Format = Literal["auto", "json", "yaml"]
else:
    Format = str  # the type checker's Literal: a command loads no typing


def decode(data: bytes | str, *, fmt: Format = "auto") -> Any:
    """Parse JSON or YAML text into Python data, without validating it.

    ``auto`` parses text whose first non-blank character is ``{`` as JSON (the
    fast path; flow-style YAML needs ``fmt="yaml"``) and anything else as YAML.
    There is no fallback from JSON to YAML: it would quietly turn a JSON typo
    such as ``{"a": }`` into a different document.  Syntax errors raise
    JobspecError with the path ``""`` and a message naming line and column.
    Duplicate keys are rejected in YAML (YAML requires unique keys; the check
    is cheap in the constructor) and the last one wins in JSON, as in orjson
    and flux-core's jansson.
    """
    if fmt == "auto":
        head = data[:1]
        if head not in (b"{", "{"):
            head = data.lstrip()[:1]
        fmt = "json" if head in (b"{", "{") else "yaml"
    if fmt == "json":
        return _decode_json(data)
    if fmt == "yaml":
        return _decode_yaml(data)
    raise ValueError(f"unknown jobspec format {fmt!r}")


def loads(data: bytes | str, *, fmt: Format = "auto") -> JobspecView:
    """Decode and validate a jobspec."""
    # decode's first test, inline for the hot path
    is_json = fmt == "auto" and data[:1] in (b"{", "{")
    obj = _decode_json(data) if is_json else decode(data, fmt=fmt)
    if not accepts(obj):
        raise_problems(obj)
    return JobspecView(obj)


def dumps(jobspec: JobspecView | Mapping[str, Any]) -> bytes:
    """Canonical JSON: compact, keys sorted, UTF-8."""
    data = jobspec.data if isinstance(jobspec, JobspecView) else jobspec
    try:
        return jsontext.dumps(data, sort_keys=True)
    except jsontext.EncodeError as exc:
        raise JobspecError([("", f"cannot be encoded as JSON: {exc}")]) from exc


def dumps_yaml(jobspec: JobspecView | Mapping[str, Any]) -> str:
    """Readable YAML: block style, keys in insertion order."""
    import yaml

    data = jobspec.data if isinstance(jobspec, JobspecView) else jobspec
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    try:
        text: str = yaml.dump(
            data, Dumper=dumper, sort_keys=False, default_flow_style=False, allow_unicode=True
        )
    except yaml.YAMLError as exc:
        raise JobspecError([("", f"cannot be encoded as YAML: {exc}")]) from exc
    return text


def _decode_json(data: bytes | str) -> Any:
    try:
        return jsontext.loads(data)
    except jsontext.DecodeError as exc:
        from json import JSONDecodeError  # here: json loads re, which a command does without

        if isinstance(exc, JSONDecodeError):
            where = f"line {exc.lineno}, column {exc.colno}"
            raise JobspecError([("", f"invalid JSON at {where}: {exc.msg}")]) from None
        raise JobspecError([("", f"invalid JSON: {exc}")]) from None


def _decode_yaml(data: bytes | str) -> Any:
    import yaml

    try:
        return yaml.load(data, Loader=_yaml_loader())  # a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        what = ", ".join(part for part in (exc.context, exc.problem) if part) or "syntax error"
        raise JobspecError([("", f"invalid YAML{where}: {what}")]) from None
    except yaml.YAMLError as exc:  # e.g. a ReaderError for bytes that are not text
        raise JobspecError([("", f"invalid YAML: {exc}")]) from None
    except (ValueError, OverflowError) as exc:  # a constructor's: a bad date, a huge integer
        raise JobspecError([("", f"invalid YAML value: {exc}")]) from None
    except RecursionError:
        raise JobspecError([("", "invalid YAML: nested too deeply")]) from None


_LOADER: type | None = None


def _yaml_loader() -> type:
    """A safe loader (libyaml's when present) that rejects duplicate keys; built once."""
    global _LOADER  # noqa: PLW0603 (lazy: PyYAML costs ~10 ms to import)
    if _LOADER is None:
        import yaml

        base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

        class Loader(base):  # type: ignore[valid-type,misc]
            def construct_mapping(self, node: Any, deep: bool = False) -> Any:
                if isinstance(node, yaml.MappingNode):
                    seen: set[Any] = set()
                    for key_node, _ in node.value:
                        if key_node.tag == "tag:yaml.org,2002:merge":
                            continue
                        key = self.construct_object(key_node, deep=deep)
                        try:
                            duplicate = key in seen
                        except TypeError:  # unhashable: the base class reports it
                            continue
                        if duplicate:
                            raise yaml.constructor.ConstructorError(
                                None, None, f"found duplicate key {key!r}", key_node.start_mark
                            )
                        seen.add(key)
                return super().construct_mapping(node, deep)

        _LOADER = Loader
    return _LOADER
