"""bpftrace's stdout, read by a thread as it prints (accepts.py): a pipe nobody reads fills at 64 KiB, and bpftrace,
blocked writing its periodic readings, would then stop draining its perf buffers and never come to its END block.
What is read stays readable after bpftrace is killed, so a reading it printed before it stuck is not lost.

The thread only ever appends to `out`; its owner may read it, and drop what it has read from the front, at any
time (each bytearray operation is atomic under the GIL, and appending never moves what is already there), but
must scan a copy: a regex iterating over `out` itself holds its buffer, and the append would then fail."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from ..core.signal_order import start_thread

READ_SIZE = 1 << 16


class OutputPump:
    """Reads `fd` into `out` until end of file, in a daemon thread that leaves signals to the main thread."""

    def __init__(self, fd: int, out: bytearray, keep: Callable[[bytearray], None] | None = None) -> None:
        self.out = out
        self._keep = keep  # called with `out` (under the lock) after each chunk: its owner's chance to drop some
        self.received = len(out)  # bytes read in all, including any the owner has since dropped
        self.ended = False  # end of file: the writer (bpftrace) has closed its stdout, or died
        self._fd = os.dup(fd)  # its own: closed by the thread once read to the end, never reused under it
        self._seen = self.received  # `received` as `more` last answered
        self._changed = threading.Condition()
        self._thread = start_thread(self._run, "accept-order-bpftrace-out")

    def _run(self) -> None:
        try:
            while chunk := os.read(self._fd, READ_SIZE):
                with self._changed:
                    self.out += chunk
                    self.received += len(chunk)
                    if self._keep is not None:
                        self._keep(self.out)
                    self._changed.notify_all()
        except OSError:
            pass
        finally:
            os.close(self._fd)
            with self._changed:
                self.ended = True
                self._changed.notify_all()

    def more(self, timeout_s: float) -> bool:
        """Whether anything came since the last call, waiting up to timeout_s for it; False once it has ended."""
        with self._changed:
            self._changed.wait_for(lambda: self.received > self._seen or self.ended, max(0.0, timeout_s))
            grew, self._seen = self.received > self._seen, self.received
            return grew

    def wait_for(self, done: Callable[[], bool], timeout_s: float) -> bool:
        """Wait up to timeout_s until done() (asked of `out` each time more comes) or end of file; done()'s answer."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while not done():
                remaining = deadline - time.monotonic()
                if self.ended or remaining <= 0:
                    return False
                self._changed.wait(remaining)
            return True

    def join(self, timeout_s: float) -> bool:
        """Wait up to timeout_s for end of file (the writer dead and reaped: its stdout is closed); True when seen."""
        self._thread.join(timeout_s)
        return not self._thread.is_alive()
