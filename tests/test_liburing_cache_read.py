"""dynamic_import (liburing's name finder) writes a cache of a package's modules and their names, and its 2024.5.2
never reads it back (loads/liburing_cache.py): every import of liburing read the names out of its compiled modules
again and rewrote the file. With the importer mended, a second import reads the cache, and a module changed since
is read again. A package of the test's own that finds its names through dynamic_import stands in for liburing, each
import in a fresh interpreter, dynamic_import's own scan (prep_package) counted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from accept_order.loads import liburing_cache

# a fresh interpreter, the test's package first on its path, dynamic_import's own scan (prep_package) counted
SCANS_COUNTED = """
import sys
sys.path.insert(0, sys.argv[1])
import dynamic_import
importer = sys.modules["dynamic_import.importer"]
real = importer.prep_package
scanned = []
def prep_package(*args, **kwargs):
    scanned.append(args[0])
    return real(*args, **kwargs)
importer.prep_package = prep_package
"""
IMPORT = (
    SCANS_COUNTED
    + """
if sys.argv[2] == "mended":
    from accept_order.loads.liburing_cache import mend
    mend()
import pkg
assert pkg.name_in_a() == "a" and pkg.NAME_IN_B == "b"
print("scanned" if scanned else "cache read")
"""
)


def printed(script: str, *args: str) -> str:
    """What `script` printed, run with `args` in an interpreter of its own."""
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def imported(root: Path, how: str) -> str:
    return printed(IMPORT, str(root), how)


def made(root: Path, name: str) -> Path:
    """A package `name` under `root` that finds its names through dynamic_import, as liburing does."""
    pytest.importorskip("dynamic_import")
    import dynamic_import.version  # noqa: F401

    if sys.modules["dynamic_import.version"].version != liburing_cache.BROKEN:  # type: ignore[attr-defined]
        pytest.skip("another dynamic_import than the one mended")
    pkg = root / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from dynamic_import import importer\nimporter()\n")
    (pkg / "a.py").write_text("__all__ = ['name_in_a']\ndef name_in_a():\n    return 'a'\n")
    (pkg / "b.py").write_text("__all__ = ['NAME_IN_B']\nNAME_IN_B = 'b'\n")
    # as an installed package has it: made by the first import, it would change the folder's mtime after the cache
    # recorded it, and the second import would (rightly) scan again
    (pkg / "__pycache__").mkdir()
    return root


@pytest.fixture
def package(tmp_path: Path) -> Path:
    return made(tmp_path, "pkg")


def test_a_second_import_reads_the_cache_the_first_wrote(package: Path) -> None:
    assert imported(package, "mended") == "scanned"  # no cache yet: the first import writes it
    assert imported(package, "mended") == "cache read"
    assert imported(package, "as released") == "scanned"  # what every import of liburing did


# liburing as the io_uring loop imports it (drivers.chains_binding), a package of the test's own by that name first
# on the path: the shared install's cache is not touched, nor its rewrites by other processes met
CHAINS_IMPORT = (
    SCANS_COUNTED
    + """
from accept_order.loads import drivers
uring = drivers.chains_binding()
assert uring.__file__.startswith(sys.argv[1]) and uring.name_in_a() == "a", uring.__file__
print("scanned" if scanned else "cache read")
"""
)


def test_liburing_imported_for_the_io_uring_loop_reads_its_cache(tmp_path: Path) -> None:
    """The mend where it counts: chains_binding, which each process running the io_uring loop calls (the other tests
    here call mend() themselves, and went on passing with chains_binding's call of it removed)."""
    root = made(tmp_path, "liburing")

    def imported_by_the_loop() -> str:
        return printed(CHAINS_IMPORT, str(root))

    assert imported_by_the_loop() == "scanned"
    assert imported_by_the_loop() == "cache read"


def test_a_module_changed_since_the_cache_was_written_is_read_again(package: Path) -> None:
    assert imported(package, "mended") == "scanned"
    module = package / "pkg" / "b.py"
    module.write_text("__all__ = ['NAME_IN_B']\nNAME_IN_B = 'b'  # changed\n")
    stat = module.stat()
    import os

    os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # a later mtime, however coarse
    assert imported(package, "mended") == "scanned"
    assert imported(package, "mended") == "cache read"


def test_a_load_cache_put_there_by_someone_else_is_left_alone() -> None:
    """tests/test_liburing_import_race.py replaces the importer's load_cache to meet the race: mend keeps theirs."""
    pytest.importorskip("dynamic_import")
    importer = sys.modules["dynamic_import.importer"]

    def theirs(*args: object) -> None:
        return None

    real = importer.load_cache  # type: ignore[attr-defined]
    importer.load_cache = theirs  # type: ignore[attr-defined]
    try:
        liburing_cache.mend()
        assert importer.load_cache is theirs  # type: ignore[attr-defined]
    finally:
        importer.load_cache = real  # type: ignore[attr-defined]
