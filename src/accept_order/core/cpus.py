"""CPU lists in the kernel's notation ("0-1,3"), and which CPUs this process may use."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Iterable

MAX_CPU_SPAN = 4096  # a wider range is refused before a list of its CPUs is built


def parse_cpu_list(text: str) -> list[int]:
    """Parse a kernel-style CPU list (``"0-1,3"``) into sorted unique CPU numbers.

    Whitespace around items is ignored (so ``/sys/.../online`` content works). Raises ValueError for
    empty input, empty items, non-numbers, negative numbers, reversed ranges such as ``"3-1"`` and
    ranges wider than MAX_CPU_SPAN.
    """
    if not text.strip():
        raise ValueError("empty CPU list (expected something like '0-3,6')")
    cpus: set[int] = set()
    for item in text.split(","):
        part = item.strip()
        lo_text, dash, hi_text = part.partition("-")
        if not part.isascii() or not lo_text.strip().isdigit() or (dash and not hi_text.strip().isdigit()):
            raise ValueError(
                f"bad CPU list item {part!r} in {text.strip()!r} (expected N or N-M with N <= M, e.g. '0-3,6')"
            )
        lo = int(lo_text)
        hi = int(hi_text) if dash else lo
        if hi < lo:
            raise ValueError(f"bad CPU range {part!r} in {text.strip()!r}: start is after end")
        if hi - lo >= MAX_CPU_SPAN or hi >= 1 << 20:
            raise ValueError(f"CPU range {part!r} is too wide (at most {MAX_CPU_SPAN} CPUs)")
        cpus.update(range(lo, hi + 1))
    return sorted(cpus)


def format_cpu_list(cpus: Iterable[int]) -> str:
    """Format CPU numbers as a compact kernel-style list: ``[0, 1, 3] -> "0-1,3"``
    (sorted, duplicates dropped; ``[]`` -> ``""``). Raises ValueError on negative numbers."""
    ordered = sorted(set(cpus))
    if ordered and ordered[0] < 0:
        raise ValueError(f"CPU numbers must be >= 0, got {ordered[0]}")
    parts: list[str] = []
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def allowed_cpus() -> list[int]:
    """CPUs this process may run on: what `--pin` spreads workers over and `--cpus` must stay within."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return list(range(os.cpu_count() or 1))


def affinity(pid: int) -> list[int]:
    """CPUs process ``pid`` may run on (sorted); ``[]`` where neither the os module nor psutil can tell.
    A process that is gone raises ProcessLookupError (os.sched_getaffinity, Linux) or
    psutil.NoSuchProcess / AccessDenied (psutil, elsewhere)."""
    getter = getattr(os, "sched_getaffinity", None)
    if getter is not None:
        return sorted(getter(pid))
    import psutil  # only where the os module cannot answer: it costs 10 ms to import

    get = getattr(psutil.Process(pid), "cpu_affinity", None)
    if get is None:
        return []
    try:
        cpus = get()
    except (NotImplementedError, AttributeError):
        return []
    return sorted(cpus) if cpus else []


def pin_self(cpu: int) -> None:
    """Pin this process to one CPU (like nginx's worker_cpu_affinity); an OSError names the CPU."""
    setter = getattr(os, "sched_setaffinity", None)
    if setter is None:  # psutil pins where the os module cannot
        import psutil

        psutil.Process().cpu_affinity([cpu])
        return
    try:
        setter(0, [cpu])
    except OSError as exc:
        raise OSError(exc.errno, f"cannot pin to CPU {cpu}: {exc.strerror}") from None


def _sched_getcpu() -> Callable[[], int] | None:
    """glibc's sched_getcpu (a vDSO read, well under a microsecond), or None where there is none."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        getcpu = libc.sched_getcpu
    except (OSError, AttributeError):
        return None
    getcpu.restype = ctypes.c_int
    getcpu.argtypes = []
    return getcpu


current_cpu = _sched_getcpu()
"""The CPU this thread runs on now (None where unknown): over loopback a connection's SYN is processed on
the CPU that called connect(), so the client's CPU then is the CPU a CPU-steered listener group sees."""
