"""Debian's node running a server script of the test's own, its stdout the test's witness: the attach tests of a
Node `net` server that writes first (a greeting, then a close or a held connection).

One start for them (it was written out in each): the script in the test's folder, ready once it printed 'listening
PORT', its output read as it comes (each connection it logs), killed at the end. Imported by name, as conftest's
helpers are (tests/ is on sys.path; no test_ prefix, so pytest collects nothing here)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from waiting import OutputReader

NODE = shutil.which("node") or shutil.which("nodejs")


@contextmanager
def node_script(source: str, folder: Path, timeout: float) -> Iterator[tuple[int, int, OutputReader]]:
    """node running `source` (which prints 'listening PORT' once it listens) until the block ends: its pid, the
    port, and its output; skips the test where Debian's nodejs is not installed."""
    if NODE is None:
        pytest.skip("needs Debian's nodejs")
    script = folder / "server.js"
    script.write_text(source)
    proc = subprocess.Popen([NODE, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        log = OutputReader(proc.stdout)
        port = int(log.wait_for(r"listening (\d+)", timeout).group(1))
        yield proc.pid, port, log
    finally:
        proc.kill()
        proc.wait(timeout)
        if proc.stdout is not None:
            proc.stdout.close()
