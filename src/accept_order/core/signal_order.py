"""Keeping the order in which the handlers of SIGINT, SIGTERM and SIGHUP run the order the kernel handed them over.

signals.ArrivalOrder reads which signal came first from the bytes Python's C-level handler writes to the wakeup
fd, one as each handler runs. Two things made that order differ from the kernel's (measured on a busy 2-CPU
machine, the second signal sent as soon as the first had left the process's pending set):

- The second signal's handler ran on top of the first's: Python installs its handlers with an empty sa_mask, so a
  signal arriving between the kernel's hand-over of the first and its handler's write had its own handler run
  first (17 to 59 of 2,000-3,000 rounds read the wrong way; 499 of 500 when both were pending at once, where the
  kernel hands over the lower number and the higher one's handler then runs on top). `one_handler_at_a_time`
  puts the three in each handler's sa_mask: a second one waits until the first's handler has returned.
- Another thread took the second: while the main thread runs the first's handler (or has it pending and is not
  on a CPU), the kernel hands a process-wide signal to any other thread that does not block it, whose handler may
  write first (4 and 25 rounds of 2,000-3,000 with the sa_mask alone and a busy thread beside; 120 of 500 with
  signals sent back to back). `start_thread` (the tool's threads) and `main_thread_only` (a library's, such as
  rich's refresh thread) start threads with the three blocked: only the main thread takes them (it runs their
  Python handlers anyway).

With both, none of 2,000 and 3,000 read the wrong way. Two signals pending at once (the main thread did not run
between them: 10 ms apart is enough on a busy machine) stay unordered: the kernel keeps one bit per signal, not
their order, and hands them over lowest number first (SIGHUP, SIGINT, SIGTERM), which is then the order read.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # the latch's (core/signals.py)

# struct sigaction as glibc and musl lay it out on these machines: handler, sa_mask (1,024 bits), sa_flags,
# sa_restorer. MIPS puts sa_flags first and s390x puts sa_mask last: elsewhere the masks are left as Python set them.
# The machine does not name the C library: Android's bionic (Termux's Python) puts sa_flags first on aarch64 and
# x86_64 too, so what is read is checked to be what Python wrote (_as_python_set) before anything is written back.
_KNOWN_LAYOUT = {"x86_64", "aarch64", "arm64", "riscv64", "ppc64le", "i386", "i486", "i586", "i686", "armv7l"}
SA_ONSTACK = 0x08000000  # its value on the machines above (Alpha's, PA-RISC's, SPARC's differ); Python sets it


def one_handler_at_a_time() -> bool:
    """Each of SIGINT, SIGTERM and SIGHUP that has a handler blocks all three while it runs: a second one is
    handed over once the first's handler has returned (its byte is in the wakeup fd by then). signal.signal
    installs an empty mask again, so this is called after the handlers are in. False where it could not be done."""
    if os.uname().machine not in _KNOWN_LAYOUT:
        return False
    import ctypes  # not at the top: the command line imports this before any heavy module (cli.main)

    from .libc import libc

    bits = 8 * ctypes.sizeof(ctypes.c_ulong)

    class SigAction(ctypes.Structure):
        _fields_ = [
            ("handler", ctypes.c_void_p),
            ("mask", ctypes.c_ulong * (1024 // bits)),
            ("flags", ctypes.c_int),
            ("restorer", ctypes.c_void_p),
        ]

    done = True
    try:
        for sig in SIGNALS:
            action = SigAction()
            if libc().sigaction(sig, None, ctypes.byref(action)) != 0:
                done = False
                continue
            if action.handler in (None, 0, 1):  # SIG_DFL, SIG_IGN: no handler to run
                continue
            if not _as_python_set(action.flags, list(action.mask[: 64 // bits]), bits):
                done = False  # another layout (or not Python's handler): a write could scramble the handler
                continue
            for other in SIGNALS:
                action.mask[(other - 1) // bits] |= 1 << ((other - 1) % bits)
            done = libc().sigaction(sig, ctypes.byref(action), None) == 0 and done
    except (OSError, AttributeError):  # no libc to load, or one without sigaction (a static interpreter)
        return False
    return done


def _as_python_set(flags: int, mask: list[int], bits: int) -> bool:
    """Whether a struct sigaction read in the layout above holds what Python's signal.signal installs (sa_flags
    with SA_ONSTACK, an empty sa_mask) or what this module made of it (the three in sa_mask). Read in another
    layout, a field lands elsewhere: bionic's sa_flags first puts the handler's address where sa_mask's first
    word is read. `mask` is the kernel's 64 signals only: glibc copies its whole 1,024-bit sa_mask out of a
    struct the kernel filled 64 bits of, the rest whatever its stack held (the kernel reads 64 bits back)."""
    ours = [0] * len(mask)
    for sig in SIGNALS:
        ours[(sig - 1) // bits] |= 1 << ((sig - 1) % bits)
    return bool(flags & SA_ONSTACK) and all(word & ~own == 0 for word, own in zip(mask, ours, strict=True))


@contextmanager
def main_thread_only() -> Iterator[None]:
    """Threads started inside the block never take SIGINT, SIGTERM or SIGHUP: a thread inherits the mask of the
    one that starts it, blocked here for the block only. A signal meanwhile waits (it is not lost) until the block
    ends. A process started from such a thread would inherit the block too: the tool starts its processes from the
    main thread."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def start_thread(target: Callable[[], None], name: str) -> threading.Thread:
    """A daemon thread of the tool's, started, that leaves SIGINT, SIGTERM and SIGHUP to the main thread."""
    thread = threading.Thread(target=target, name=name, daemon=True)
    with main_thread_only():
        try:
            thread.start()
        except RuntimeError:  # "can't start new thread": clone refused, as a user at `ulimit -u` was (a traceback)
            from .errors import ResourceError

            raise ResourceError(
                f"could not start a thread ({name}): the kernel refused it (check `ulimit -u`, which counts threads)"
            ) from None
    return thread
