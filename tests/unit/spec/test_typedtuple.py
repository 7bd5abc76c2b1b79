"""``pflux.spec.typedtuple.NamedTuple`` makes what ``typing.NamedTuple`` makes."""

from __future__ import annotations

import keyword
import pickle
import typing

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pflux.spec.typedtuple import NamedTuple


class Point(NamedTuple):
    """A point."""

    x: int
    y: int = 3

    def total(self) -> int:
        return self.x + self.y

    @property
    def double(self) -> int:
        return 2 * self.x


class TypingPoint(typing.NamedTuple):
    x: int
    y: int = 3


def test_fields_defaults_methods_and_docstring_as_typings() -> None:
    point = Point(1)
    assert point == (1, 3) == TypingPoint(1)
    assert repr(point) == "Point(x=1, y=3)"
    assert Point._fields == TypingPoint._fields
    assert Point._field_defaults == TypingPoint._field_defaults
    assert point.total() == 4
    assert point.double == 2
    assert Point.__doc__ == "A point."
    assert Point.__module__ == __name__
    assert Point.__qualname__ == "Point"
    assert point._replace(y=5) == Point(1, 5)
    assert point._asdict() == {"x": 1, "y": 3}
    assert isinstance(point, tuple)


def test_a_tuple_pickles_by_its_module_and_name() -> None:
    assert pickle.loads(pickle.dumps(Point(2, 4))) == Point(2, 4)


def test_a_field_without_a_default_after_one_with_is_refused() -> None:
    with pytest.raises(TypeError, match="without a default follows one with"):

        class Bad(NamedTuple):
            a: int = 1
            b: int


_NAMES = st.from_regex(r"[a-z][a-z0-9]{0,6}", fullmatch=True).filter(
    lambda name: not keyword.iskeyword(name)
)


@given(
    names=st.lists(_NAMES, min_size=1, max_size=6, unique=True),
    data=st.data(),
)
def test_any_fields_make_the_same_tuple_as_typings(names: list[str], data: st.DataObject) -> None:
    with_default = data.draw(st.integers(0, len(names)))
    defaults = {name: data.draw(st.integers()) for name in names[len(names) - with_default :]}
    namespace: dict[str, object] = {"__annotations__": dict.fromkeys(names, "int")}
    namespace.update(defaults)
    ours = type(NamedTuple)("T", (NamedTuple,), {"__module__": __name__, **namespace})
    theirs = typing.NamedTuple("T", [(name, int) for name in names])
    theirs.__new__.__defaults__ = tuple(defaults.values()) or None
    values = data.draw(
        st.lists(st.integers(), min_size=len(names) - with_default, max_size=len(names))
    )
    assert ours._fields == theirs._fields
    assert ours._field_defaults == defaults
    assert ours(*values) == theirs(*values)
    assert repr(ours(*values)) == repr(theirs(*values))


def test_errors_and_protocols_as_typings() -> None:
    for kind in (Point, TypingPoint):
        with pytest.raises(TypeError, match="Expected 2 arguments, got 3"):
            kind._make((1, 2, 3))
        with pytest.raises(ValueError, match="Got unexpected field names: \\['z'\\]"):
            kind(1)._replace(z=2)
        with pytest.raises(TypeError):
            kind()
        with pytest.raises(AttributeError):
            kind(1).x = 2  # type: ignore[misc]
        assert not hasattr(kind(1), "__dict__")
        assert kind.__match_args__ == ("x", "y")
        assert hash(kind(1)) == hash((1, 3))
        assert kind(y=2, x=1) == (1, 2)
        assert kind(1).__getnewargs__() == (1, 3)
    match Point(4, 5):
        case Point(a, b):
            assert (a, b) == (4, 5)


def test_one_field_and_none() -> None:
    class One(NamedTuple):
        only: str

    class Empty(NamedTuple):
        pass

    assert One("a") == ("a",)
    assert repr(One("a")) == "One(only='a')"
    assert Empty() == ()
    assert repr(Empty()) == "Empty()"
