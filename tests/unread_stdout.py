"""A command's stdout on a pipe nobody reads, for `--json -`'s write that must end on a signal rather than wait for
ever (tests/test_json_stdout.py, tests/test_json_stdout_stalled_after_stop.py): `UnreadStdout` starts the command
with the pipe's reading end held by the test and never read, tells when the pipe is full, and kills the command and
closes the pipe on leaving. `SCRIPT_ARGS`: the experiment scripts' runs whose JSON is more than a page (herd's ~5 KB,
latency's ~15 KB), which a pipe cut down to one page cannot take. Imported by name, as conftest's helpers are."""

from __future__ import annotations

import array
import fcntl
import os
import subprocess
import termios
from pathlib import Path

from conftest import wait_for

SCRIPTS = Path(__file__).resolve().parents[1] / "experiments"
SCRIPT_ARGS = {
    "herd.py": ["--workers", "2", "--connections", "2", "--clients", "4", "--modes", "epoll"],
    "latency_shared_vs_reuseport.py": (
        ["--workers", "2", "--connections", "50", "--concurrency", "4", "--modes", "epoll,reuseport"]
    ),
}


class UnreadStdout:
    """`argv` started in `cwd`, its stdout a pipe (cut down to `size` bytes where given) whose reading end only the
    test holds, its stderr piped as text; on leaving, the command killed if it still runs, and the pipe closed."""

    def __init__(self, argv: list[str], cwd: Path, size: int | None = None) -> None:
        readable, writable = os.pipe()
        try:
            if size is not None:
                fcntl.fcntl(writable, fcntl.F_SETPIPE_SZ, size)
            self.capacity = fcntl.fcntl(readable, fcntl.F_GETPIPE_SZ)
            self.proc = subprocess.Popen(argv, stdout=writable, stderr=subprocess.PIPE, text=True, cwd=cwd)
        except BaseException:
            os.close(readable)
            raise
        finally:
            os.close(writable)  # the command's alone now: a full pipe blocks it, not a writer of ours
        self._readable = readable

    def held(self) -> int:
        """Bytes in the pipe, written and not read."""
        count = array.array("i", [0])
        fcntl.ioctl(self._readable, termios.FIONREAD, count)
        return count[0]

    def wait_until_full(self, timeout: float, what: str) -> None:
        wait_for(self.held, lambda held: held >= self.capacity, timeout, what)

    def __enter__(self) -> UnreadStdout:
        return self

    def __exit__(self, *_: object) -> None:
        try:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
        finally:
            os.close(self._readable)
