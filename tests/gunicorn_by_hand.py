"""PyPI's gunicorn started by hand with a WSGI app of the test's own, for the tests that attach to it or inspect it
(a server accept-order did not start): the attach refusals, the busy-time model's, inspect's all-busy look.

One start for all of them (it was written out in each): gunicorn's sync workers on a port the kernel picks, its
master in a session of its own (killed as a group at the end), ready once its log says it listens and every worker
booted. Its HOME and XDG_RUNTIME_DIR are the test's folder: gunicorn 24+ makes its control socket there
(~/.gunicorn/gunicorn.ctl, in root's home otherwise). Imported by name, as conftest's helpers are (tests/ is on
sys.path; no test_ prefix, so pytest collects nothing here)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from waiting import OutputReader

GUNICORN = Path(sys.executable).with_name("gunicorn")
BOOTED = r"Booting worker with pid: (\d+)"


@dataclass(frozen=True)
class HandGunicorn:
    """A running gunicorn: its master's pid, port, workers' pids (as booted) and access log."""

    master: int
    port: int
    workers: list[int]
    access_log: Path


@contextmanager
def gunicorn_by_hand(app: str, folder: Path, workers: int, timeout: float, *options: str) -> Iterator[HandGunicorn]:
    """gunicorn serving `app` (a module's source defining the WSGI callable `app`) from `folder` with `workers`
    sync workers and gunicorn's `options`, each request in folder/access.log, until the block ends; skips the test
    where gunicorn is not installed beside this Python (the test extra's)."""
    if not GUNICORN.exists():
        pytest.skip("needs PyPI's gunicorn (pip install '.[test]')")
    (folder / "hand_app.py").write_text(app)
    access = folder / "access.log"
    command = [str(GUNICORN), "-w", str(workers), "-b", "127.0.0.1:0", "--chdir", str(folder)]
    proc = subprocess.Popen(
        [*command, "--access-logfile", str(access), *options, "hand_app:app"],
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "HOME": str(folder), "XDG_RUNTIME_DIR": str(folder)},
    )
    try:
        assert proc.stderr is not None
        log = OutputReader(proc.stderr)
        port = int(log.wait_for(r"Listening at: http://127\.0\.0\.1:(\d+)", timeout).group(1))
        log.wait_for("(?s)" + ".*".join([BOOTED] * workers), timeout)
        yield HandGunicorn(proc.pid, port, [int(pid) for pid in re.findall(BOOTED, log.text)], access)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout)
        if proc.stderr is not None:
            proc.stderr.close()
