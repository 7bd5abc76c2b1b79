"""``typing.NamedTuple`` for a module that a short command loads, without ``typing``.

Importing ``typing`` costs a command about 4 ms of its start-up, so a client-side
module declares its named tuples against this class and lets the type checker see
``typing``'s::

    TYPE_CHECKING = False
    if TYPE_CHECKING:
        from typing import NamedTuple
    else:
        from pflux.spec.typedtuple import NamedTuple

A subclass becomes a named tuple of its annotated fields (defaults from their
values, as ``typing.NamedTuple``'s), with its methods and docstring: the class
``collections.namedtuple`` makes, made here with the same C field accessors, as
the ``collections`` package costs a short command more than all its tuples.
"""

from __future__ import annotations

from _collections import _tuplegetter  # type: ignore[import-not-found]

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

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
        made = _named_tuple(name, fields, tuple(defaults), module)
        made.__qualname__ = str(namespace.get("__qualname__", name))
        made.__annotations__ = annotations
        for key, value in namespace.items():
            if key not in _OWN and key not in annotations:
                setattr(made, key, value)
        return made


def _named_tuple(name: str, fields: list[str], defaults: tuple[Any, ...], module: str) -> type:
    """A tuple class whose items are also ``fields`` by name, as ``namedtuple`` makes."""
    params = ", ".join(fields) + ("," if len(fields) == 1 else "")
    new = eval(
        f"lambda _cls, {params}: _new(_cls, ({params}))",
        {"_new": tuple.__new__, "__builtins__": {}},
    )
    new.__name__ = "__new__"
    new.__defaults__ = defaults or None
    count = len(fields)

    def _make(cls: type, iterable: Iterable[Any]) -> Any:
        made: Any = tuple.__new__(cls, iterable)
        if len(made) != count:
            raise TypeError(f"Expected {count} arguments, got {len(made)}")
        return made

    def _replace(self: Any, /, **changes: Any) -> Any:
        made = self._make(map(changes.pop, fields, self))
        if changes:
            raise ValueError(f"Got unexpected field names: {list(changes)!r}")
        return made

    shown = "(" + ", ".join(f"{field}=%r" for field in fields) + ")"

    def _repr(self: Any) -> str:
        return str(self.__class__.__name__ + shown % self)

    def _asdict(self: Any) -> dict[str, Any]:
        return dict(zip(fields, self, strict=True))

    def _newargs(self: Any) -> tuple[Any, ...]:
        return tuple(self)

    names = tuple(fields)
    namespace: dict[str, Any] = {
        "__doc__": f"{name}({', '.join(fields)})",
        "__slots__": (),
        "_fields": names,
        "_field_defaults": dict(zip(fields[count - len(defaults) :], defaults, strict=True)),
        "__new__": new,
        "_make": classmethod(_make),
        "_replace": _replace,
        "__repr__": _repr,
        "_asdict": _asdict,
        "__getnewargs__": _newargs,
        "__match_args__": names,
        "__module__": module,
    }
    for index, field in enumerate(fields):
        namespace[field] = _tuplegetter(index, f"Alias for field number {index}")
    return type(name, (tuple,), namespace)


class NamedTuple(metaclass=_Maker):
    """Subclass it with annotated fields, as ``typing.NamedTuple``."""
