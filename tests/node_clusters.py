"""A Node cluster kept for a module's tests (test_node_observe_fed, test_attach_node_primary_accepts): started once,
alive between the tests, killed at the module's end.

Kept that long, a cluster must also end where pytest cannot end it: a SIGTERM, SIGHUP or SIGKILL of the test
process runs no teardown, and a primary in a session of its own (where a Ctrl-C at the terminal does not reach it)
outlived it, with its workers, holding its port for good (4 processes left after `kill -TERM` or `kill -KILL` of
pytest in test_node_observe_fed). The primary now dies with the thread that started it (PR_SET_PDEATHSIG, as
cluster.py's sshds do), and its workers leave when their channel to it closes (Node's cluster workers exit on
'disconnect'). Imported by name, as conftest's helpers are (no test_ prefix: pytest collects nothing here).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

import psutil
from cluster import dies_with
from conftest import KEPT_BY_FIXTURES, wait_for

from accept_order.servers.launched.node import node_binary


def started_node_cluster(script: Path, port: int, args: Sequence[str], ready: Path) -> subprocess.Popen[bytes]:
    """`node script PORT *args READY` in a session of its own, dying with the thread that calls this."""
    return subprocess.Popen(
        [node_binary(), str(script), str(port), *args, str(ready)],
        start_new_session=True,  # a Ctrl-C at the terminal reaches pytest, whose teardown ends it
        preexec_fn=dies_with(os.getpid()),  # and a pytest killed outright takes it along
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@contextlib.contextmanager
def kept_node_cluster(source: str, folder: Path, args: Sequence[str], timeout_s: float) -> Iterator[tuple[int, int]]:
    """`source` run by node as `cluster.js PORT *args READY` on a port free a moment ago, once its primary wrote
    READY: (the port, the primary's pid). Its primary and workers are in KEPT_BY_FIXTURES until it is killed here."""
    script, ready = folder / "cluster.js", folder / "ready"
    script.write_text(source)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    proc = started_node_cluster(script, port, args, ready)
    kept = {proc.pid}
    KEPT_BY_FIXTURES.add(proc.pid)  # alive between the module's tests on purpose, as are its workers below
    try:
        wait_for(lambda: ready.exists() and ready.read_text(), bool, timeout_s, "the cluster's workers to listen")
        kept.update(child.pid for child in psutil.Process(proc.pid).children(recursive=True))
        KEPT_BY_FIXTURES.update(kept)
        yield port, proc.pid
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # its workers are in its session: none outlives the module
        proc.wait()
        KEPT_BY_FIXTURES.difference_update(kept)
