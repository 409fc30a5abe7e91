"""Debian's puma started by hand for the inspect and observe tests of a Puma accept-order did not start (all workers
busy, --fork-worker, a refork), and its control server asked through pumactl.

Each of those tests started Puma itself from a config.ru of its own, in a session of its own, read its port from its
log and killed the session at the end; two asked pumactl for its stats. One copy for all three (they were written
three and two times). Imported by name, as conftest's helpers are (tests/ is on sys.path; no test_ prefix, so pytest
collects nothing here)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from waiting import OutputReader

TIMEOUT_S = 30.0
TOKEN = "x"  # the control server's: pumactl sends it with each command


def control(port: int) -> tuple[str, ...]:
    """Puma's options for a control server on 127.0.0.1:`port` (a thread named 'puma ctl', the master's or single
    mode's one process's, selecting on a listener of its own), which pumactl asks with TOKEN."""
    return ("--control-url", f"tcp://127.0.0.1:{port}", "--control-token", TOKEN)


@contextmanager
def puma(directory: Path, app: str, *options: str) -> Iterator[tuple[subprocess.Popen[str], OutputReader, int]]:
    """Puma serving `app` (a config.ru's text, written in `directory`) with `options` (-w, -t, ...) on a port of its
    own on 127.0.0.1: the process, its log and its port once it listens, until the block ends (its session killed:
    its workers go with it)."""
    (directory / "config.ru").write_text(app)
    proc = subprocess.Popen(
        ["puma", *options, "-b", "tcp://127.0.0.1:0", str(directory / "config.ru")],
        cwd=directory,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        log = OutputReader(proc.stdout)
        port = int(log.wait_for(r"Listening on http://127\.0\.0\.1:(\d+)", TIMEOUT_S).group(1))
        yield proc, log, port
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(TIMEOUT_S)
        if proc.stdout is not None:
            proc.stdout.close()


def pumactl(control: int, command: str) -> subprocess.CompletedProcess[str]:
    """pumactl's `command` to the control server on 127.0.0.1:`control`."""
    return subprocess.run(
        ["pumactl", "-C", f"tcp://127.0.0.1:{control}", "-T", TOKEN, command],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def stats(control: int) -> dict[str, object] | None:
    """Puma's own stats through its control server (pumactl): the JSON on its last line; None until it answers."""
    asked = pumactl(control, "stats")
    lines = asked.stdout.strip().splitlines()
    if asked.returncode != 0 or not lines or not lines[-1].startswith("{"):
        return None
    return json.loads(lines[-1])  # type: ignore[no-any-return]
