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


def test_a_binding_that_lacks_a_name_the_chains_use_sends_the_loop_to_uring_api(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seen on client hosts of one machine importing liburing at once: a driver died with "module 'liburing' has
    no attribute 'sockaddr'". The names are asked for before the drivers fork; one missing is a reason."""
    import types

    partial = types.SimpleNamespace(__version__=drivers.CHAINS_VERSION, **{n: 1 for n in drivers.CHAINS_NAMES[1:]})
    monkeypatch.setattr(drivers, "chains_binding", lambda: partial)
    drivers.chains_unavailable.cache_clear()
    try:
        assert "lacks io_uring (its module cache is incomplete)" in (drivers.chains_unavailable() or "")
    finally:
        drivers.chains_unavailable.cache_clear()


def test_the_names_the_chains_use_are_the_ones_checked() -> None:
    import re
    from pathlib import Path

    source = (Path(drivers.__file__).parent / "uring_chains.py").read_text()
    used = set(re.findall(r"\buring\.([a-z_0-9]+)\b", source)) - {"h"}  # 'uring.h': a comment naming the header
    assert used == set(drivers.CHAINS_NAMES), used ^ set(drivers.CHAINS_NAMES)
