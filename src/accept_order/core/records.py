"""The methods @dataclass writes for a frozen record's repr, == and hash, written once for every record.

Python 3.11's @dataclass writes each method of each class as source and compiles it while the module is
imported: six compilations for a frozen record, half of its cost in __repr__, __eq__ and __hash__ (issue 30:
`run --mode epoll` defines 8 records as it starts, ~5.8 M instructions each, callgrind). A record made with
`@dataclass(frozen=True, eq=False, repr=False)` and then `@shared_methods` gets these three from here instead,
reading its fields when called: the same text, the same equality and the same hash as @dataclass's own on
Python 3.11 and 3.12 (tests/test_shared_record_methods.py compares them, field options included). 3.13's
@dataclass compares field by field instead of as tuples (a NaN both hold, the same object, is unequal there, and
a field's non-bool == is passed on): these records keep the tuples' == on every Python. asdict, replace, fields
and pickling are @dataclass's as before."""

from __future__ import annotations

import reprlib
from dataclasses import Field, fields
from typing import Any, TypeVar

T = TypeVar("T", bound=type)

# per class: the names its repr shows, those == compares, those hash reads (@dataclass's rules)
_NAMES: dict[type, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {}


def _names(cls: type) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    names = _NAMES.get(cls)
    if names is None:
        every: tuple[Field[Any], ...] = fields(cls)
        names = (
            tuple(f.name for f in every if f.repr),
            tuple(f.name for f in every if f.compare),
            tuple(f.name for f in every if (f.compare if f.hash is None else f.hash)),
        )
        _NAMES[cls] = names
    return names


@reprlib.recursive_repr()  # a record that holds itself shows `...` there, as @dataclass's repr does
def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in _names(self.__class__)[0])
    return f"{self.__class__.__qualname__}({shown})"


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        compared = _names(self.__class__)[1]
        return tuple(getattr(self, n) for n in compared) == tuple(getattr(other, n) for n in compared)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(tuple(getattr(self, name) for name in _names(self.__class__)[2]))


def shared_methods(cls: T) -> T:
    """`cls` (a frozen dataclass made with eq=False and repr=False) with @dataclass's repr, == and hash."""
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    if not params.frozen or params.eq or params.repr:
        raise TypeError(f"{cls.__qualname__}: @shared_methods is for @dataclass(frozen=True, eq=False, repr=False)")
    cls.__repr__ = _repr  # type: ignore[assignment]
    cls.__eq__ = _eq  # type: ignore[assignment]
    cls.__hash__ = _hash  # type: ignore[assignment]
    return cls
