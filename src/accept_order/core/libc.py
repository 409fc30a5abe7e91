"""The C library, for the system calls Python's os module lacks (kcmp, setns, unshare on 3.11)."""

from __future__ import annotations

import ctypes
import functools


@functools.cache
def libc() -> ctypes.CDLL:
    """libc as this process has it loaded already (the interpreter links it), errno kept: the symbols of the
    process itself. ctypes.util.find_library("c") names the same file by running ldconfig, a subprocess (14 ms
    of every inspect here); it is asked only where the process's own symbols lack `syscall` (a static build)."""
    try:
        own = ctypes.CDLL(None, use_errno=True)
        if all(hasattr(own, name) for name in ("syscall", "setns", "unshare")):
            return own
    except OSError:
        pass
    from ctypes import util

    return ctypes.CDLL(util.find_library("c") or "libc.so.6", use_errno=True)
