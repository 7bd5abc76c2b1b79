"""``flux.job._utils``: the ``--requires`` query language of flux's submission commands,
and ``--conf``'s configuration (``BatchConfig``)."""

from __future__ import annotations

import json
import os

from flux.constraint.parser import ConstraintParser
from flux.util import dict_merge, get_treedict, set_treedict, xdg_searchpath

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class MiniConstraintParser(ConstraintParser):
    """RFC 35's ``--requires``: a bare word is a property, ``host:``/``hosts:`` a
    hostlist, ``rank:`` ranks; properties given together make one term."""

    operator_map = {  # noqa: RUF012 - the parser's class-level tables, as its base declares
        None: "properties",
        "host": "hostlist",
        "hosts": "hostlist",
        "rank": "ranks",
    }
    split_values = {"properties": ","}  # noqa: RUF012
    combined_terms = {"properties"}  # noqa: RUF012


def _tomllib() -> Any:
    """``tomllib`` (Python 3.11 or newer); ValueError naming the need elsewhere."""
    import importlib

    try:
        return importlib.import_module("tomllib")
    except ImportError:
        raise ValueError("--conf: TOML needs Python 3.11 or newer (tomllib)") from None


class BatchConfig:
    """A ``--conf=[FILE|KEY=VAL|TEXT|NAME]`` option's configuration, built from
    successive ``update()`` calls into ``config`` (as flux's ``flux.job.BatchConfig``)."""

    def __init__(self) -> None:
        self.config: dict[str, Any] | None = None

    def update_string(self, value: str) -> BatchConfig:
        """Merge JSON or TOML text."""
        try:
            conf = json.loads(value)
        except json.JSONDecodeError:
            tomllib = _tomllib()
            try:
                conf = tomllib.loads(value)
            except tomllib.TOMLDecodeError:
                raise ValueError("--conf: failed to parse multiline as TOML or JSON") from None
        self.config = dict_merge(self.config or {}, conf)
        return self

    def update_keyval(self, keyval: str) -> BatchConfig:
        """Set a dotted key (``resource.noverify=true``), its value JSON or else text."""
        key, _, text = keyval.partition("=")
        value: Any
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = str(text)
        if self.config is None:
            self.config = {}
        try:
            set_treedict(self.config, key, value)
        except (TypeError, AttributeError) as exc:
            raise TypeError(f"failed to set {key} to {value}: {exc}") from None
        return self

    def update_file(self, path: str, extension: str = ".toml") -> BatchConfig:
        """Merge a ``.toml`` or ``.json`` file."""
        if extension not in (".toml", ".json"):
            raise ValueError(f"--conf: {path} must end in .toml or .json")
        try:
            with open(path, "rb") as fp:
                data = fp.read()
        except OSError as exc:
            raise ValueError(f"--conf: {exc}") from None
        try:
            conf = json.loads(data) if extension == ".json" else _tomllib().loads(data.decode())
        except ValueError as exc:  # JSONDecodeError and TOMLDecodeError are ValueErrors
            if str(exc).startswith("--conf:"):
                raise
            raise ValueError(f"--conf: parse error: {path}: {exc}") from None
        self.config = dict_merge(self.config or {}, conf)
        return self

    def update_named_config(self, name: str) -> BatchConfig:
        """Merge ``NAME.toml`` (else ``NAME.json``) of the first XDG config directory
        (``flux/config``) that has one."""
        for directory in xdg_searchpath(subdir="config"):
            for extension in (".toml", ".json"):
                filename = f"{directory}/{name}{extension}"
                if os.path.exists(filename):
                    try:
                        return self.update_file(filename, extension)
                    except ValueError as exc:
                        raise ValueError(f"--conf={name}: {filename}: {exc}") from None
        raise ValueError(f"--conf: named config '{name}' not found")

    def update(self, value: str) -> BatchConfig:
        """Merge ``value``: TEXT if it holds a newline (JSON or TOML), KEY=VAL if it holds
        ``=``, a file if it ends in ``.toml`` or ``.json``, else a named config."""
        if self.config is None:
            self.config = {}
        if "\n" in value:
            return self.update_string(value)
        if "=" in value:
            return self.update_keyval(value)
        extension = os.path.splitext(value)[1]
        if extension in (".toml", ".json"):
            return self.update_file(value, extension)
        return self.update_named_config(value)

    def get(self, key: str, default: Any = None) -> Any:
        """The value at a dotted key, or ``default``."""
        return get_treedict(self.config or {}, key, default=default)


def normalize_conf(conf: Any) -> dict[str, Any]:
    """A nested instance's configuration as a mapping: ``conf`` itself, a
    ``BatchConfig``'s, or a string ``BatchConfig.update`` reads (KEY=VAL, JSON or TOML
    text, a file, a named config)."""
    if isinstance(conf, BatchConfig):
        return conf.config or {}
    if isinstance(conf, str):
        return BatchConfig().update(conf).config or {}
    return dict(conf)
