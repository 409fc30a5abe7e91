"""liburing's cache of its own modules, read back as its importer means to.

PyPI's liburing (the io_uring loop's chains, drivers.chains_binding) finds its names through dynamic_import, which
writes a cache of every module of the package and the names in each (liburing/__pycache__/__init__.importer-311.pyc)
for the next import to read. dynamic_import 2024.5.2, its latest release, never reads it: load_cache unpacks the
cached tuple over two lines without parentheses, so the first line is an expression of undefined names, whose
NameError it takes for "no cache". Each import then reads the names out of liburing's compiled modules again and
rewrites the file: 44 ms of CPU an import against 33 with the cache read (Linux 6.18, 2 vCPUs, load 9), paid by
every process that runs the io_uring loop (the coordinator's, each client host's Python), and every import
rewriting the file is what made the race drivers.chains_binding retries (one import removing the file another
reads) come up at all. `mend()` gives the importer a load_cache that reads the same file with the same checks.
"""

from __future__ import annotations

import marshal
import os
import sys
from typing import Any

BROKEN = "2024.5.2"  # dynamic_import's version whose load_cache never reads its cache


def load_cache(cache_path: str, recursive: bool, exclude_file: Any, exclude_dir: Any, version: str) -> Any:
    """dynamic_import's load_cache as its code reads: the cached names, or None where the cache is missing, unreadable
    (a half-written one included), of another version or options, or older than a folder or module it covers."""
    try:
        with open(cache_path, "rb") as file:
            cached = marshal.load(file)
        cached_version, cached_recursive, cached_exclude_file, cached_exclude_dir, dir_mtime, data = cached
        if (cached_version, cached_recursive, cached_exclude_file, cached_exclude_dir) != (
            version,
            recursive,
            exclude_file,
            exclude_dir,
        ):
            return None
        if any(os.stat(folder).st_mtime != mtime for folder, mtime in dir_mtime.items()):
            return None
        if any(os.stat(path).st_mtime != mtime for _, path, _, mtime in data.values()):
            return None
        return data
    except Exception:  # noqa: BLE001 - as dynamic_import's own: anything wrong with the file is "no cache"
        return None


def mend() -> None:
    """Give dynamic_import's importer this load_cache, where it is the broken release's own (not another version,
    nor one a caller put there)."""
    try:
        import dynamic_import  # noqa: F401  (its package imports the importer module)
    except ImportError:
        return
    importer = sys.modules.get("dynamic_import.importer")
    cache = sys.modules.get("dynamic_import.cache")
    version = getattr(sys.modules.get("dynamic_import.version"), "version", None)
    if importer is None or cache is None or version != BROKEN:
        return
    if getattr(importer, "load_cache", None) is getattr(cache, "load_cache", None):
        setattr(importer, "load_cache", load_cache)  # noqa: B010 - a module mypy knows nothing of
