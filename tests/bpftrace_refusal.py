"""What bpftrace says when the kernel refuses its program, and the accept counter's word from a child, for the tests
of the hint given beside it (a capability lacking, a user namespace's root).

One copy for both (they were written twice: bpftrace 0.17's warning and error, and the probe run under a prefix
such as setpriv or unshare). Imported by name, as conftest's helpers are (tests/ is on sys.path; no test_ prefix,
so pytest collects nothing here)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable

EVERY_CAPABILITY = (1 << 41) - 1  # CAP_CHOWN .. CAP_CHECKPOINT_RESTORE (40), as root holds them on Linux 5.9+
WARNING = b"ERROR: Unknown error -1: couldn't set RLIMIT_MEMLOCK for bpftrace. If your program is not loading...\n"
MAP = b"ERROR: failed to create map: '@': Operation not permitted\n"  # bpftrace 0.17 without CAP_BPF

PROBE = """
import os
from accept_order.probes.accepts import AcceptCounter
counter = AcceptCounter([os.getpid()])
counter.start()
counts = counter.stop()
counter.close()
print(counts.available, counts.why, sep="\\n")
"""


def accept_counter_word(*prefix: str, preexec_fn: Callable[[], None] | None = None) -> list[str]:
    """Whether the accept counter loaded in a child run under `prefix`, and why not: its two lines."""
    done = subprocess.run(
        [*prefix, sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, preexec_fn=preexec_fn
    )
    assert done.returncode == 0, done
    return done.stdout.splitlines()
