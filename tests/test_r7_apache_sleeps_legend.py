"""Apache's 'sleeps' legend said 'each worker's main thread alone' (ServerKind.sleeps' default, e898e00), where the
launched Apache reads every thread of each child (ApacheServer.start: ThreadGroupUsage): an event child's listener
and worker threads, whose switches its main thread's /proc/PID/status does not count. The legend now says every
thread.

The witness for what is read: a process whose second thread blocks 200 times, its main thread not at all, read by
the same function the launched Apache's usage reads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from test_h7_sleeps_legend import _shown

from accept_order.core.processes import usage
from accept_order.servers.launched.apache import thread_group_usage

BLOCKS = 200
SCRIPT = f"""
import sys, threading, time
def blocks():
    for _ in range({BLOCKS}):
        time.sleep(0.0001)
    print("done", flush=True)
    sys.stdin.read()  # alive while it is read: an ended thread's switches leave the process's count
t = threading.Thread(target=blocks)
t.start()
t.join()
"""


def test_apaches_sleeps_are_every_threads(tmp_path: Path) -> None:
    (legend,) = _shown(tmp_path, "latency", "apache", "event")
    assert "voluntary context switches of every thread of each child process" in legend, legend
    assert "main thread alone" not in legend, legend


def test_what_apaches_usage_reads_counts_every_thread() -> None:
    proc = subprocess.Popen([sys.executable, "-c", SCRIPT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "done\n"
        whole, main = thread_group_usage(proc.pid)[0], usage(proc.pid)[0]
        assert whole - main >= BLOCKS, (whole, main)  # the other thread's blocks: not the main thread's
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(30)
