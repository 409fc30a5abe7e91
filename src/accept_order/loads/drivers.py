"""Which loop a load generator runs: io_uring where the kernel and the binding allow it, else epoll.

Both loops do the same job with the same records (loads/drive_loop.py, loads/uring_loop.py). The io_uring loop
runs on PyPI's liburing where it is installed (loads/uring_chains.py: one premade linked chain per connection,
socket to EOF, two completions per served connection), else on uring-api (a request at a time); either way one
`io_uring_enter` serves many connections where the epoll loop pays socket, connect, epoll_ctl, recv and close
for each. Measured here (Linux 6.18, 2-vCPU KVM beside other work, load 4-13,
benchmarks/bench_latency_driver.py, 2 processes x 25 connections): CPU-µs per connection 39-51 on liburing's
chains against 43-56 for a C epoll client and 51-71 for the epoll loop in the same rounds (uring-api's loop:
55-62 against C's 49-53, whole processes), the workers paying 0-4 µs more beside an io_uring client. The
kernel's share is about C's (it is the bulk of every client's); the interpreter's is what is left: 12.7k
instructions per connection on the chains, 17.1k on epoll, 23.9k on uring-api (callgrind). It needs Linux 5.19+
(IORING_OP_SOCKET), io_uring not disabled (kernel.io_uring_disabled, seccomp: containers often forbid it) and
PyPI's uring-api (liburing 2024.5.3 besides, for the chains: the `uring` extra); "auto" falls back to epoll when
one is missing, and kept connections (loads/kept.py) always run on epoll.
"""

from __future__ import annotations

import functools
import sys
import time
from typing import Any, Literal

from ..core.errors import PlanError
from ..core.hints import pip_install
from ..core.spec import Driver
from ..core.uring import lacking
from .liburing_cache import mend as mend_liburing_cache

Loop = Literal["io_uring", "epoll"]


def binding() -> Any:
    """PyPI's uring-api (the `uring` extra), imported when a load asks for it."""
    import uring_api

    return uring_api


# What loads/uring_chains.py takes from liburing
CHAINS_NAMES = (
    "io_uring", "io_uring_cqe", "io_uring_sqe", "sockaddr", "timespec", "io_uring_queue_init", "io_uring_queue_exit",
    "io_uring_register_files_sparse", "io_uring_get_sqe", "io_uring_put_sqe", "io_uring_submit",
    "io_uring_submit_and_wait_timeout", "io_uring_peek_cqe", "io_uring_cq_ready", "io_uring_cq_advance",
    "io_uring_prep_socket_direct", "io_uring_prep_connect", "io_uring_prep_send", "io_uring_prep_recv",
    "io_uring_prep_cancel64", "io_uring_prep_close_direct",
)  # fmt: skip
CHAINS_VERSION = "2024.5.3"  # PyPI liburing's Cython release; its later (Zig) wheels need AVX-512 CPUs


def chains_binding() -> Any:
    """PyPI's liburing (the `uring` extra), for the io_uring loop's linked chains (loads/uring_chains.py).

    Its first import in a fresh environment writes a cache of its modules (dynamic_import, in its __pycache__)
    without locking: two processes importing it at that moment (the client hosts of one machine, parallel
    tests) can see the other's half-written cache and both remove it, one failing with FileNotFoundError.
    The cache is whole once either has written it, so the import is tried again. (Its importer rewrote the cache on
    every import, never reading it: liburing_cache.mend().)"""
    mend_liburing_cache()
    for attempt in range(5):
        try:
            import liburing
        except OSError as exc:  # the cache race above; an import that cannot succeed raises ImportError
            if attempt == 4:
                raise ImportError(f"liburing could not be imported: {exc}") from None
            _forget_failed_importer()
            time.sleep(0.01 * (attempt + 1))
        else:
            return liburing
    raise AssertionError("unreachable")


def _forget_failed_importer() -> None:
    """dynamic_import records a package's importer() call before it reads the cache, and a failed import leaves
    the record: the next import then skips importer() and yields a bare liburing without one of its names (a
    driver died on 'no attribute sockaddr'). The record is dropped, so the next import starts afresh."""
    called = getattr(sys.modules.get("dynamic_import.check"), "IMPORTER_CALLED", None)
    if isinstance(called, dict):
        for path in [p for p in called if isinstance(p, str) and p.rstrip("/").endswith("/liburing")]:
            del called[path]


@functools.cache
def chains_unavailable() -> str | None:
    """Why the io_uring loop runs on uring-api (loads/uring_loop.py) rather than liburing's linked chains
    (loads/uring_chains.py) in this process, or None when the chains can run (the kernel is asked when
    uring_unavailable() is None: the same IORING_OP_SOCKET)."""
    try:
        uring = chains_binding()
    except ImportError:
        return f"needs liburing {CHAINS_VERSION}: {pip_install('uring')}"
    if getattr(uring, "__version__", None) != CHAINS_VERSION:
        return f"liburing {getattr(uring, '__version__', '?')} installed, {CHAINS_VERSION} needed"
    # liburing finds its names through a cache of its modules (dynamic_import) and loads each on first use.
    # Asked for here, in the process that forks the drivers, every name the chains use is loaded once, before
    # the fork; one it lacks (seen on client hosts of one machine that imported it at the same moment:
    # "module 'liburing' has no attribute 'sockaddr'" in a driver, a bare module from the retry before
    # _forget_failed_importer) sends the loop to uring-api's instead.
    missing = [name for name in CHAINS_NAMES if not hasattr(uring, name)]
    if missing:
        return f"liburing {CHAINS_VERSION} here lacks {', '.join(missing)} (its module cache is incomplete)"
    return None


@functools.cache
def uring_unavailable() -> str | None:
    """Why the io_uring loop cannot run in this process, or None when it can (probed once)."""
    try:
        uring = binding()
    except ImportError:
        return f"needs the io_uring binding: {pip_install('uring')}"
    return lacking(
        uring, "IORING_OP_SOCKET", "this kernel cannot make sockets through io_uring (IORING_OP_SOCKET: Linux 5.19+)"
    )


def resolve(requested: Driver, kept: bool = False) -> Loop:
    """The loop to run for `requested` (--driver): "auto" is io_uring when it can run, else epoll;
    io_uring asked for where it cannot run is a PlanError saying why. Kept connections run on epoll."""
    if requested == "epoll":
        return "epoll"
    if kept:
        if requested == "io_uring":
            raise PlanError("--driver io_uring drives one request per connection: kept connections run on epoll")
        return "epoll"
    why = uring_unavailable()
    if why is None:
        chains_unavailable()  # liburing imported here, once, not in each driver the load forks (30-100 ms each)
        return "io_uring"
    if requested == "io_uring":
        raise PlanError(f"--driver io_uring: {why}")
    return "epoll"
