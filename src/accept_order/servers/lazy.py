"""A registry whose entries are made on first use: the accept modes (servers/modes) and the server kinds
(servers/registry.py) are listed by name with where each one is, and a command imports only those it asks for
(issue 30: a `run --mode epoll` of the built-in workers imports one mode's module and no launched kind's).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

T = TypeVar("T")


class Made(Mapping[str, T], Generic[T]):
    """name -> the one object made for it, on first use, from where it is: "module:Class" under `package` (its
    class called with no arguments) or a function that makes it. Names, their order and `in` need nothing
    imported; each object is made once and the same one is handed back after (a test may patch it)."""

    def __init__(self, package: str, where: Mapping[str, str | Callable[[], T]]) -> None:
        self._package = package
        self._where = dict(where)
        self._made: dict[str, T] = {}

    def __getitem__(self, name: str) -> T:
        made = self._made.get(name)
        if made is None:
            where = self._where[name]  # KeyError for a name nobody registered, as a dict's
            if isinstance(where, str):
                module, _, attribute = where.partition(":")
                made = getattr(importlib.import_module(f".{module}", self._package), attribute)()
            else:
                made = where()
            made = self._made.setdefault(name, made)  # two threads that raced hand out the same one
        return made

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, name: object) -> bool:
        return name in self._where

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self._where)!r})"
