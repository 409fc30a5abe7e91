"""liburing's first import writes a cache of its modules without locking: two client hosts of one machine importing
it at once (a fresh CI venv) failed one host with FileNotFoundError. The import is tried again."""

from __future__ import annotations

import builtins
from typing import Any

import pytest

from accept_order.loads import drivers


def test_an_import_that_loses_the_cache_race_is_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("liburing")
    real = builtins.__import__
    failures = [FileNotFoundError(2, "No such file or directory", "__init__.importer-311.pyc")]

    def racing(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "liburing" and failures:
            raise failures.pop()
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", racing)
    assert drivers.chains_binding().__name__ == "liburing"
    assert not failures


def test_an_import_that_keeps_failing_is_an_import_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real = builtins.__import__

    def failing(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "liburing":
            raise FileNotFoundError(2, "No such file or directory")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", failing)
    with pytest.raises(ImportError, match="liburing could not be imported"):
        drivers.chains_binding()
