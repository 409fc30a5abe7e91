"""A shape's quick answer (`fits`, `fits_all`: no paths made) never passes a value its `check` refuses, and
for the plain JSON values a file holds it is the same answer: containers ask `fits` of each item and `check`
only the items that do not fit, so a `fits` that said True wrongly would let a wrong value into the reports."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from accept_order.results.schema import (
    MAX_COUNT,
    Anything,
    Flag,
    Integer,
    Items,
    ListOf,
    MapOf,
    Maybe,
    Number,
    OneOf,
    Record,
    SchemaError,
    Shape,
    Text,
)

SCALARS: tuple[Any, ...] = (
    None, True, False, 0, 1, -1, 7, MAX_COUNT, MAX_COUNT + 1, -MAX_COUNT - 1, 10**30, 10**400, 0.0, -0.0, 0.5,
    -2.5, 1e30, float("nan"), float("inf"), float("-inf"), "", "x", "x" * 70, [], {}, [1], {"a": 1}, (1, 2),
)  # fmt: skip


def _no_rule_past_three(value: Any, at: str) -> None:
    if value.get("n", 0) > 3:
        raise SchemaError(at, "too many")


SHAPES: tuple[Shape, ...] = (
    Anything(),
    Integer(),
    Integer(1),
    Integer(-5, 5),
    Number(),
    Number(-1.0, 1.0),
    Flag(),
    Text(),
    Text(3),
    OneOf(("a", 1)),
    Maybe(Integer()),
    Maybe(Text(3)),
    ListOf(Integer()),
    ListOf(Number(), fewest=1),
    Items((Number(), Integer(1))),
    ListOf(Items((Integer(), Integer(1)))),
    MapOf(Integer()),
    MapOf(Maybe(Text())),
    Record({"n": Integer(), "name": Text()}, frozenset({"n"}), (_no_rule_past_three,)),
    ListOf(Record({"n": Integer()}, frozenset({"n"}), (_no_rule_past_three,))),
)


# Stable names (a Record's repr shows its rule's address, which differs between pytest-xdist's workers).
NAMES = [f"{i}-{type(shape).__name__}" for i, shape in enumerate(SHAPES)]


def _passes(shape: Shape, value: Any) -> bool:
    try:
        shape.check(value, "v")
    except SchemaError:
        return False
    return True


def _values(rng: random.Random) -> list[Any]:
    """The scalars, and lists, pairs and objects made of them (the shapes' containers)."""
    values: list[Any] = list(SCALARS)
    for _ in range(400):
        items = rng.sample(SCALARS, rng.randint(0, 4))
        values.append(items)
        values.append([rng.choice(SCALARS), rng.choice(SCALARS)])
        values.append([[rng.choice((0, 1, 5, -1, 0.5, True)), rng.choice((1, 2, 0, None))] for _ in range(3)])
        values.append({"n": rng.choice((0, 2, 4, -1, True, "1")), "name": rng.choice(("a", 1, None))})
        values.append({str(i): item for i, item in enumerate(items)})
    return values


@pytest.mark.parametrize("shape", SHAPES, ids=NAMES)
def test_fits_is_checks_answer(shape: Shape) -> None:
    for value in _values(random.Random(NAMES[SHAPES.index(shape)])):
        assert shape.fits(value) == _passes(shape, value), (shape, value)


@pytest.mark.parametrize("shape", SHAPES, ids=NAMES)
def test_fits_all_is_every_items_answer(shape: Shape) -> None:
    rng = random.Random(NAMES[SHAPES.index(shape)])
    values = _values(rng)
    for size in itertools.chain(range(5), (50,)):
        for _ in range(60):
            picked = rng.sample(values, size) if rng.random() < 0.5 else [rng.choice(values)] * size
            for some in (picked, tuple(picked)):
                assert shape.fits_all(some) == all(_passes(shape, v) for v in some), (shape, some)
