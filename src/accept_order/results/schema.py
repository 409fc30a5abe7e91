"""The shape of a result document, checked whole, once, when a file is loaded (results/envelope.py).

A shape says what a JSON value must be: a non-negative integer under a bound, a finite number, a string,
a list of shapes, an object with fields, and rules across fields (a sum that must add up, a list no
longer than the workers). Each result kind's shape is declared with its experiment (experiments/*/),
mostly derived from its frozen dataclasses by `derive`; the pieces every kind shares are in
results/shapes.py. A value that does not fit is one SchemaError naming its path in the document
(`runs[0].histogram.counts[3][1]`), what was expected and what was there, so no later code (reports,
exports, merge, pictures) ever sees a wrong type, a negative count, NaN, an absurd size or a sum that
does not add up. Keys a shape does not name are left alone (a newer version may add some): whatever
reads a whole object generically (a CSV table of its fields) must take any JSON there.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, get_args, get_origin, get_type_hints

from .shape import LIST_TYPES, MAX_COUNT, MAX_TEXT, REAL_TYPES, SchemaError, Shape, bounded, child, is_real, wrong


@dataclass(frozen=True)
class Anything(Shape):
    """Any JSON value (the parser already refused NaN, infinities, deep nesting and huge integers)."""

    expected = "any value"

    def check(self, value: Any, at: str) -> None:
        return None

    def fits(self, value: Any) -> bool:
        return True


@dataclass(frozen=True)
class Integer(Shape):
    """A whole number (never a bool, never 1.0) from `low` to `high`."""

    low: int = 0
    high: int = MAX_COUNT

    @property
    def expected(self) -> str:  # type: ignore[override]
        if self.high == MAX_COUNT and self.low in (0, 1, -MAX_COUNT):
            return {0: "a non-negative integer", 1: "a positive integer"}.get(self.low, "an integer")
        return f"an integer from {self.low} to {self.high}"

    def check(self, value: Any, at: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or not self.low <= value <= self.high:
            raise wrong(at, bounded(self.expected, value), value)

    def fits(self, value: Any) -> bool:
        # type() is: a bool is not an integer here; an int subclass is left to check
        return type(value) is int and self.low <= value <= self.high

    def fits_all(self, values: Sequence[Any]) -> bool:
        return not values or (set(map(type, values)) == {int} and self.low <= min(values) and max(values) <= self.high)


@dataclass(frozen=True)
class Number(Shape):
    """A finite number (an integer or a float, never a bool) from `low` to `high`."""

    low: float = 0.0
    high: float = float(MAX_COUNT)

    @property
    def expected(self) -> str:  # type: ignore[override]
        if self.high == MAX_COUNT and self.low in (0, -MAX_COUNT):
            return "a non-negative number" if self.low == 0 else "a number"
        return f"a number from {self.low:g} to {self.high:g}"

    def check(self, value: Any, at: str) -> None:
        # The bounds first: an integer past a float's range (10**400) compares exactly, but isfinite would
        # convert it and raise OverflowError.
        if not is_real(value) or not self.low <= value <= self.high or not math.isfinite(value):
            raise wrong(at, bounded(self.expected, value), value)

    def fits(self, value: Any) -> bool:
        kind = type(value)
        return (kind is float or kind is int) and self.low <= value <= self.high and math.isfinite(value)

    def fits_all(self, values: Sequence[Any]) -> bool:
        if not values:
            return True
        if not set(map(type, values)) <= REAL_TYPES:
            return False
        # The bounds before isfinite, as check: a NaN first makes min() NaN (refused); a NaN later hides
        # nothing from min() and max() (it compares false), and isfinite then finds it.
        return self.low <= min(values) and max(values) <= self.high and all(map(math.isfinite, values))


@dataclass(frozen=True)
class Flag(Shape):
    expected = "true or false"

    def check(self, value: Any, at: str) -> None:
        if not isinstance(value, bool):
            raise wrong(at, self.expected, value)

    def fits(self, value: Any) -> bool:
        return value is True or value is False

    def fits_all(self, values: Sequence[Any]) -> bool:
        return set(map(type, values)) <= {bool}


@dataclass(frozen=True)
class Text(Shape):
    """A string of at most `longest` characters."""

    longest: int = MAX_TEXT

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"a string of at most {self.longest} characters"

    def check(self, value: Any, at: str) -> None:
        if not isinstance(value, str) or len(value) > self.longest:
            raise wrong(at, self.expected, value)

    def fits(self, value: Any) -> bool:
        return type(value) is str and len(value) <= self.longest

    def fits_all(self, values: Sequence[Any]) -> bool:
        return not values or (set(map(type, values)) == {str} and max(map(len, values)) <= self.longest)


@dataclass(frozen=True)
class OneOf(Shape):
    """One of a few JSON values (strings, numbers)."""

    values: tuple[Any, ...]

    @property
    def expected(self) -> str:  # type: ignore[override]
        return "one of " + ", ".join(json.dumps(v) for v in self.values)

    def check(self, value: Any, at: str) -> None:
        # type() as well: 1 == 1.0 == True, and a file's `true` is not the number 1
        if not self.fits(value):
            raise wrong(at, self.expected, value)

    def fits(self, value: Any) -> bool:
        return any(value == v and type(value) is type(v) for v in self.values)


@dataclass(frozen=True)
class Maybe(Shape):
    """null, or `shape`."""

    shape: Shape

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"{self.shape.expected} or null"

    def check(self, value: Any, at: str) -> None:
        if value is None or self.shape.fits(value):
            return
        try:
            self.shape.check(value, at)
        except SchemaError as exc:
            if exc.at != at:
                raise  # a part of it is wrong: that part's message says more
            raise wrong(at, self.expected, value) from None

    def fits(self, value: Any) -> bool:
        return value is None or self.shape.fits(value)


@dataclass(frozen=True)
class ListOf(Shape):
    """A list whose every item is `item`."""

    item: Shape
    fewest: int = 0

    @property
    def expected(self) -> str:  # type: ignore[override]
        return "a list" if not self.fewest else f"a list of at least {self.fewest}"

    def check(self, value: Any, at: str) -> None:
        if not isinstance(value, list | tuple) or len(value) < self.fewest:  # tuples: from the Python API
            raise wrong(at, self.expected, value)
        fits = self.item.fits
        for index, item in enumerate(value):
            if not fits(item):
                self.item.check(item, child(at, index))

    def fits(self, value: Any) -> bool:
        return isinstance(value, list | tuple) and len(value) >= self.fewest and self.item.fits_all(value)


@dataclass(frozen=True)
class Items(Shape):
    """A list of exactly len(shapes) items, each its own shape (a histogram's [value, count] pair)."""

    shapes: tuple[Shape, ...]

    @property
    def expected(self) -> str:  # type: ignore[override]
        return f"a list of {len(self.shapes)}"

    def check(self, value: Any, at: str) -> None:
        if not isinstance(value, list | tuple) or len(value) != len(self.shapes):
            raise wrong(at, self.expected, value)
        for index, (item, shape) in enumerate(zip(value, self.shapes, strict=True)):
            if not shape.fits(item):
                shape.check(item, child(at, index))

    def fits(self, value: Any) -> bool:
        shapes = self.shapes
        if not isinstance(value, list | tuple) or len(value) != len(shapes):
            return False
        return all(shape.fits(item) for shape, item in zip(shapes, value, strict=True))

    def fits_all(self, values: Sequence[Any]) -> bool:
        """Column by column: a histogram's thousands of [value, count] pairs in a few calls."""
        if not values:
            return True
        if not set(map(type, values)) <= LIST_TYPES or set(map(len, values)) != {len(self.shapes)}:
            return False
        columns = zip(*values, strict=True)
        return all(shape.fits_all(column) for shape, column in zip(self.shapes, columns, strict=True))


@dataclass(frozen=True)
class MapOf(Shape):
    """An object whose every value is `value` (its keys are strings: JSON's are)."""

    value: Shape

    expected = "an object"

    def check(self, value: Any, at: str) -> None:
        if not isinstance(value, dict):
            raise wrong(at, self.expected, value)
        fits = self.value.fits
        for key, item in value.items():
            if not fits(item):
                self.value.check(item, child(at, key))

    def fits(self, value: Any) -> bool:
        return isinstance(value, dict) and self.value.fits_all(tuple(value.values()))


# A rule across the fields of an object: given the object (already checked field by field) and its path,
# raise SchemaError naming the field that does not add up.
Rule = Callable[[Mapping[str, Any], str], None]


@dataclass(frozen=True)
class Record(Shape):
    """An object with named fields: those in `required` must be there, the others may be absent (or
    null where their shape allows). Unknown keys are left alone. `rules` run after every field fits."""

    fields: Mapping[str, Shape]
    required: frozenset[str] = frozenset()
    rules: tuple[Rule, ...] = ()

    expected = "an object"

    def check(self, value: Any, at: str) -> None:
        if not isinstance(value, dict):
            raise wrong(at, self.expected, value)
        missing = sorted(self.required - value.keys())
        if missing:
            raise SchemaError(child(at, missing[0]), "missing")
        for name, shape in self.fields.items():
            if name in value and not shape.fits(item := value[name]):
                shape.check(item, child(at, name))
        for rule in self.rules:
            rule(value, at)

    def fits(self, value: Any) -> bool:
        if not isinstance(value, dict) or not self.required <= value.keys():
            return False
        for name, shape in self.fields.items():
            if name in value and not shape.fits(value[name]):
                return False
        # A rule says what is wrong only by raising, naming a path: asked here without one (it is pure).
        try:
            for rule in self.rules:
                rule(value, "")
        except SchemaError:
            return False
        return True

    def but(self, *, optional: Iterable[str] = (), rules: Iterable[Rule] = (), **fields: Shape) -> Record:
        """This record with some fields' shapes replaced (or added), some made optional, more rules."""
        return Record(
            {**self.fields, **fields},
            self.required - frozenset(optional),
            self.rules + tuple(rules),
        )


# -- shapes from frozen dataclasses ------------------------------------------------------------------------

_SCALARS: dict[Any, Shape] = {int: Integer(), float: Number(), bool: Flag(), str: Text(), Any: Anything()}
# A type every result shares -> its shape (results/shapes.py registers them: ServerSpec, the histogram, ...),
# so a field of that type anywhere gets the same checks and rules.
KNOWN: dict[type, Shape] = {}


def known(cls: type, shape: Shape) -> Shape:
    """Register `shape` as the shape of every field of type `cls` that `derive` meets."""
    KNOWN[cls] = shape
    return shape


def _shape_of(hint: Any, owner: str, name: str) -> Shape:
    origin = get_origin(hint)
    if hint in _SCALARS:
        return _SCALARS[hint]
    if isinstance(hint, type) and hint in KNOWN:
        return KNOWN[hint]
    if origin is typing.Literal:
        return OneOf(get_args(hint))
    if origin in (typing.Union, types.UnionType):
        present = [a for a in get_args(hint) if a is not type(None)]
        if len(present) == 1 and len(get_args(hint)) == 2:
            return Maybe(_shape_of(present[0], owner, name))
    if origin is tuple:
        args = get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return ListOf(_shape_of(args[0], owner, name))
        return Items(tuple(_shape_of(a, owner, name) for a in args))
    if origin in (dict, Mapping) or origin is getattr(typing, "Mapping", None):
        key, value = get_args(hint) or (str, Any)
        if key is str:
            return MapOf(_shape_of(value, owner, name))
    if hint is dict:
        return MapOf(Anything())
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return derive(hint)
    raise TypeError(f"{owner}.{name}: no shape for {hint!r}; give one to derive()")


def derive(
    cls: type,
    *,
    optional: Iterable[str] = (),
    omit: Iterable[str] = (),
    rules: Iterable[Rule] = (),
    **shapes: Shape,
) -> Record:
    """The Record of a frozen dataclass as its `to_dict` writes it: a field per dataclass field, its shape
    from the type hint (int: a non-negative integer, float: a non-negative finite number, X | None, a
    Literal, tuples as lists, dict[str, X], registered types (`known`), other dataclasses derived in turn)
    unless `shapes` gives one; required when it has no default, unless named in `optional`; `omit`: fields
    never saved. Shapes for names that are not fields add keys the document holds besides them."""
    hints = get_type_hints(cls)
    skipped = set(omit)
    fields: dict[str, Shape] = {}
    required = set()
    for f in dataclasses.fields(cls):
        if f.name in skipped:
            continue
        fields[f.name] = shapes.pop(f.name) if f.name in shapes else _shape_of(hints[f.name], cls.__name__, f.name)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.add(f.name)
    fields.update(shapes)  # keys the document holds besides the dataclass's fields (derived figures)
    return Record(fields, frozenset(required - set(optional)), tuple(rules))
