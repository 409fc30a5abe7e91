"""Room for an output: the free space of the filesystem a result file or picture goes to, checked before a
run against what it could need, so a long run does not end with "No space left on device" after its
measuring. The output-path check (files.check_output_path) writes an empty file, which still fits on a full
disk; only the free space itself tells. The write after the run still reports a short write as it always
did: the free space may go meanwhile, to others or to the run's own servers' logs."""

from __future__ import annotations

import os

from accept_order.core.errors import ResultFileError
from accept_order.core.text import escape_controls

KIB = 1024


def size_text(n: int) -> str:
    """A byte count as people read it: `512 bytes`, `48 KiB`, `2.1 MiB`, `3.0 GiB` (KiB whole, the others to a
    tenth)."""
    if n < KIB:
        return f"{n} bytes"
    if n < KIB * KIB:
        return f"{n // KIB} KiB"
    if n < KIB**3:
        return f"{n / KIB**2:.1f} MiB"
    return f"{n / KIB**3:.1f} GiB"


UID_MAP = "/proc/self/uid_map"  # how this process's user namespace maps its uids to the kernel's


def _kernels_root() -> bool:
    """Whether this process is uid 0 as the kernel counts it. ext4 keeps its reserved blocks (5% by default) for
    the filesystem's resuid, the kernel's uid 0, compared in the initial namespace: root of a user namespace (a
    rootless container, uid 0 mapped to 100000) is another uid there and may not write into them."""
    if os.geteuid() != 0:
        return False
    try:
        with open(UID_MAP, encoding="ascii") as lines:
            ranges = [[int(field) for field in line.split()] for line in lines if line.strip()]
    except (OSError, ValueError):
        return True  # no /proc to ask: the initial namespace is the likely one
    return any(len(r) == 3 and r[0] <= 0 < r[0] + r[2] and r[1] - r[0] == 0 for r in ranges)


def free_bytes(folder: str | os.PathLike[str]) -> int:
    """What this process may still put on the filesystem of `folder`: statvfs's f_bavail, or f_bfree as the
    kernel's root (ext4 keeps 5% for it: a disk full to others is not full to it)."""
    st = os.statvfs(folder)
    return (st.f_bfree if _kernels_root() else st.f_bavail) * st.f_frsize


def check_room(path: str, need: int, *, option: str = "--json", what: str = "the result") -> None:
    """ResultFileError (exit 1, one line saying the free space and the need) when the filesystem `path` is
    written to has less than `need` bytes free. The file is written beside itself and renamed over any old
    one, so an old file's space is not counted as free. A folder that cannot be asked is left to the write."""
    folder = os.path.dirname(path) or "."  # not pathlib: it imports urllib, which a run never needs
    try:
        free = free_bytes(folder)
    except OSError:
        return
    if free < need:
        raise ResultFileError(
            f"{option}: {size_text(free)} free on the filesystem of {escape_controls(folder)}, and {what} could "
            f"need about {size_text(need)}: free some space there or write elsewhere"
        )
