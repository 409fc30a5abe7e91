"""uWSGI (PyPI's pyuwsgi) started by hand for the tests of how a masterless uWSGI's processes are read: its
parent is worker 1 and forks the others, every one holding the listener. Each test names its app and options; the
starting, the wait for the processes and the ending (SIGKILL of the whole session, then each process gone) are here.
Imported by name (`from pyuwsgi_started import masterless`), as conftest's helpers are (tests/ is on sys.path; no
test_ prefix, so pytest collects nothing here).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import psutil
from conftest import gone, wait_for

TIMEOUT_S = 30.0
HOST = "127.0.0.1"
RUN = "import sys, pyuwsgi; sys.exit(pyuwsgi.run())"


@contextmanager
def pyuwsgi(tmp_path: Path, app: str, options: str, output: Path | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """pyuwsgi in `tmp_path` serving app.py (the text `app`) with `options`, in a session of its own, its stdout and
    stderr to `output` (else nowhere); on leaving, SIGKILLed with its whole group and waited for."""
    (tmp_path / "app.py").write_text(app)
    with ExitStack() as stack:
        out = stack.enter_context(open(output, "wb")) if output is not None else subprocess.DEVNULL
        first = subprocess.Popen(
            ["bash", "-c", f"cd {tmp_path} && exec {sys.executable} -c '{RUN}' {options}"],
            stdout=out,
            stderr=out,
            start_new_session=True,
        )
        try:
            yield first
        finally:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(10)


@contextmanager
def masterless(tmp_path: Path, app: str, options: str, output: Path | None = None) -> Iterator[tuple[int, int]]:
    """pyuwsgi --processes 2 without a master: (parent, child) once both are there; on leaving, both gone."""
    pids: list[int] = []
    try:
        with pyuwsgi(tmp_path, app, f"--processes 2 {options}", output) as first:

            def processes() -> list[int]:
                try:
                    return [first.pid, *(p.pid for p in psutil.Process(first.pid).children())]
                except psutil.Error:
                    return []

            pids = wait_for(processes, lambda now: len(now) == 2, TIMEOUT_S, "the parent and its one child")
            yield pids[0], pids[1]
    finally:
        wait_for(lambda: pids, gone, 10, "the workers end")
