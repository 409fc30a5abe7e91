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


# A fresh interpreter (liburing may be imported in this one already) whose first import meets the race for real:
# the cache it finds is unreadable and the other host removes it first (FileNotFoundError inside importer()).
RACE = """
import sys
import dynamic_import
importer = sys.modules["dynamic_import.importer"]
real_load, real_remove = importer.load_cache, importer.remove
lost = [True]
def load_cache(*args, **kwargs):
    return None if lost else real_load(*args, **kwargs)
def remove(path):
    if lost:
        lost.pop()
        raise FileNotFoundError(2, "No such file or directory", path)
    real_remove(path)
importer.load_cache, importer.remove = load_cache, remove
from accept_order.loads import drivers
why = drivers.chains_unavailable()
assert not lost, "the race was not met"
print(why)
"""


def test_the_import_tried_again_has_every_name_the_chains_use() -> None:
    """dynamic_import records importer()'s call before the failure: tried again without dropping that record, the
    import gave a bare liburing (no name loaded), and a driver died on 'no attribute sockaddr'."""
    pytest.importorskip("liburing")
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", RACE], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "None", done.stdout
