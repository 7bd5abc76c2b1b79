"""The instance's configuration (``pflux start --config FILE``): every key known, or refused.

Each service declares the tables and keys it reads (``Service.config_keys``:
a table's dotted path -> its keys; a key that is itself declared as a table is
one; ``*`` in a path stands for any name, as in ``queues.*``). The instance
collects the declarations of the services it loads and, before any of them
starts, refuses a table or key that none reads, naming the nearest known name,
so that a typo is never silently ignored. A service that finds a known key's
value wrong raises ``ConfigError`` (``pflux.errors``), naming the table, the
key and the rule; ``pflux start`` adds the file's name.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from pflux.errors import ConfigError

__all__ = ["ConfigError", "Declared", "check_known"]

Declared = Mapping[str, Collection[str]]


def check_known(config: Mapping[str, Any], declared: Declared) -> None:
    """ConfigError for the first table or key of ``config`` that nothing declares."""
    tables = sorted(path for path in declared if "." not in path)
    for name, value in config.items():
        if name not in declared:
            raise ConfigError(name, None, "unknown table" + _hint(name, tables, "[{}]"))
        _check_table(name, name, value, declared)


def _check_table(path: str, form: str, value: Any, declared: Declared) -> None:
    """Check the table at ``path``, declared as ``form`` (``*`` for a name of any table)."""
    if not isinstance(value, dict):
        raise ConfigError(path, None, f"must be a table, got {value!r}")
    keys = declared[form]
    subtables = {p.rpartition(".")[2] for p in declared if p.rpartition(".")[0] == form}
    known = sorted({*keys, *subtables} - {"*"})
    for key, item in value.items():
        if key in subtables:
            _check_table(f"{path}.{key}", f"{form}.{key}", item, declared)
        elif "*" in subtables:
            _check_table(f"{path}.{key}", f"{form}.*", item, declared)
        elif key not in keys:
            raise ConfigError(path, key, "unknown key" + _hint(key, known, "{}"))


def _hint(name: str, known: list[str], form: str) -> str:
    import difflib  # only once something is wrong

    near = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    if near:
        return f" (did you mean {form.format(near[0])}?)"
    if not known:
        return " (none is read)"
    return f" (known: {', '.join(form.format(k) for k in known)})"
