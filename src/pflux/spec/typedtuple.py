"""``typing.NamedTuple`` for a module that a short command loads, without ``typing``.

Importing ``typing`` costs a command about 4 ms of its start-up, so a client-side
module declares its named tuples against this class and lets the type checker see
``typing``'s::

    TYPE_CHECKING = False
    if TYPE_CHECKING:
        from typing import NamedTuple
    else:
        from pflux.spec.typedtuple import NamedTuple

A subclass becomes a ``collections.namedtuple`` of its annotated fields (defaults
from their values, as ``typing.NamedTuple``'s), with its methods and docstring.
"""

from __future__ import annotations

from collections import namedtuple

__all__ = ["NamedTuple"]

_OWN = frozenset(("__module__", "__qualname__", "__annotations__"))


class _Maker(type):
    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, object]) -> type:
        if not bases:  # NamedTuple itself
            return super().__new__(mcs, name, bases, namespace)
        annotations = namespace.get("__annotations__", {})
        assert isinstance(annotations, dict)
        fields = list(annotations)
        defaults = [namespace[field] for field in fields if field in namespace]
        if any(field in namespace for field in fields[: len(fields) - len(defaults)]):
            raise TypeError(f"{name}: a field without a default follows one with a default")
        module = str(namespace.get("__module__"))
        made: type = namedtuple(name, fields, defaults=defaults, module=module)  # type: ignore[misc]
        made.__qualname__ = str(namespace.get("__qualname__", name))
        made.__annotations__ = annotations
        for key, value in namespace.items():
            if key not in _OWN and key not in annotations:
                setattr(made, key, value)
        return made


class NamedTuple(metaclass=_Maker):
    """Subclass it with annotated fields, as ``typing.NamedTuple``."""
