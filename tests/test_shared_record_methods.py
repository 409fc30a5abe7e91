"""core/records.py: a record made with @dataclass(frozen=True, eq=False, repr=False) and @shared_methods has the
repr, the equality and the hash @dataclass(frozen=True) gives it: compared with a twin made by @dataclass itself,
for records with every field option, one that holds itself, and the records of a saved run (tests/data/golden)."""

from __future__ import annotations

import dataclasses
import functools
import json
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import pytest

from accept_order.core.records import shared_methods
from accept_order.experiments.order.result import RunResult

GOLDEN_RUN = Path(__file__).resolve().parent / "data" / "golden" / "run.json"


@functools.cache  # one twin a class: the twins of two records compare as the records' classes do
def twin(cls: type) -> type:
    """`cls`'s fields (their options and defaults) in a class of the same name that @dataclass(frozen=True) makes."""
    specs = []
    for f in fields(cls):
        made = field(
            default=f.default, default_factory=f.default_factory, init=f.init, repr=f.repr, hash=f.hash,
            compare=f.compare, metadata=f.metadata, kw_only=f.kw_only,
        )  # fmt: skip
        specs.append((f.name, f.type, made))
    made_twin = dataclasses.make_dataclass(cls.__name__, specs, frozen=True)
    made_twin.__qualname__ = cls.__qualname__
    return made_twin


def as_twin(record: Any) -> Any:
    return twin(type(record))(**{f.name: getattr(record, f.name) for f in fields(record)})


def hashed(value: Any) -> int | str:
    try:
        return hash(value)
    except TypeError as exc:
        return f"TypeError: {exc}"


def assert_alike(record: Any, other: Any) -> None:
    """`record` and `other` (of its class) compare, hash and show as their @dataclass twins do."""
    ours, theirs = (record, other), (as_twin(record), as_twin(other))
    assert repr(record) == repr(theirs[0])
    assert hashed(record) == hashed(theirs[0])
    assert (ours[0] == ours[1], ours[0] != ours[1]) == (theirs[0] == theirs[1], theirs[0] != theirs[1])
    assert record.__eq__(object()) is NotImplemented and (record == 1) is False


@shared_methods
@dataclass(frozen=True, eq=False, repr=False)
class Options:
    shown: int
    hidden: int = field(default=0, repr=False)
    ignored: int = field(default=0, compare=False)
    unhashed: int = field(default=0, hash=False)
    hashed_only: int = field(default=0, compare=False, hash=True)
    items: tuple[Any, ...] | list[Any] = ()


def test_field_options_as_dataclass_reads_them() -> None:
    base = Options(1, 2, 3, 4, 5, (1, "a"))
    for other in (
        base, Options(1, 2, 3, 4, 5, (1, "a")), Options(2, 2, 3, 4, 5, (1, "a")), Options(1, 9, 3, 4, 5, (1, "a")),
        Options(1, 2, 9, 4, 5, (1, "a")), Options(1, 2, 3, 9, 5, (1, "a")), Options(1, 2, 3, 4, 9, (1, "a")),
    ):  # fmt: skip
        assert_alike(base, other)
        assert_alike(other, base)
    unhashable = Options(1, items=[1])
    assert_alike(unhashable, unhashable)


def test_a_record_that_holds_itself_shows_dots_there() -> None:
    held: list[Any] = []
    record = Options(1, items=held)
    held.append(record)
    assert repr(record) == "Options(shown=1, ignored=0, unhashed=0, hashed_only=0, items=[...])"


def test_refuses_a_record_whose_methods_dataclass_wrote() -> None:
    with pytest.raises(TypeError, match="eq=False, repr=False"):

        @shared_methods
        @dataclass(frozen=True)
        class Written:
            a: int


def test_a_saved_runs_records_as_dataclass_made_them() -> None:
    """The records `run` makes (the result, its server and load, environment, verdict, counters, connections)."""
    result = RunResult.from_dict(json.loads(GOLDEN_RUN.read_text()))
    records = [result, result.server, result.load, result.environment, result.verdict]
    records += [*result.counters, *result.records]
    assert {type(r).__name__ for r in records} >= {"RunResult", "ServerSpec", "WorkerCounters", "ConnectionRecord"}
    for record in records:
        assert_alike(record, record)
        assert_alike(record, replace(record))
        changed = next(f for f in fields(record) if f.compare and isinstance(getattr(record, f.name), int | str))
        value = getattr(record, changed.name)
        assert_alike(record, replace(record, **{changed.name: value + 1 if isinstance(value, int) else value + "x"}))


def test_a_subclass_is_not_equal_as_in_dataclass() -> None:
    """@dataclass's == is for the same class only: a subclass's record with the same fields is another record."""

    class Sub(Options):
        pass

    class TwinSub(twin(Options)):  # type: ignore[misc]
        pass

    assert (Options(1) == Sub(1), Sub(1) == Options(1)) == (False, False)
    assert (twin(Options)(1) == TwinSub(1), TwinSub(1) == twin(Options)(1)) == (False, False)
