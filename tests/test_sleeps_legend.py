"""'sleeps' meant two things and no legend said which: in `latency --server puma` a launched Puma worker's sleeps
are its server thread's (the one that waits in select: its wakeups, servers/watched.ThreadedUsage), under
`--attach` every thread's (servers/thread_switches.EveryThreadUsage), and latency's worker table had no legend.
Whose switches they are is each kind's to say (ServerKind.sleeps), and the reports' legend says it: latency's
where a worker is not one thread, run's always. The built-in workers, one thread each, keep the legend's words.

Apache's legend said 'each worker's main thread alone' (ServerKind.sleeps' default, e898e00), where the launched
Apache reads every thread of each child (ApacheServer.start: ThreadGroupUsage): an event child's listener and worker
threads, whose switches its main thread's /proc/PID/status does not count. The legend now says every thread. The
witness for what is read: a process whose second thread blocks 200 times, its main thread not at all, read by the
same function the launched Apache's usage reads."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli

from accept_order.core.processes import usage
from accept_order.servers.launched.apache import thread_group_usage

GOLDEN = Path(__file__).parent / "data" / "golden"
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


def _shown(tmp_path: Path, name: str, server: str, mode: str, **spec: object) -> list[str]:
    doc = json.loads((GOLDEN / f"{name}.json").read_text())
    doc["server"].update(server=server, mode=mode, **spec)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    result = run_cli(["show", str(path)])
    assert result.exit_code == 0, result.output
    return [line for line in result.stdout.splitlines() if "sleeps: " in line]


@pytest.mark.parametrize(
    ("server", "mode", "spec", "said"),
    [
        (
            "puma",
            "cluster",
            {},
            "voluntary context switches of each worker's server thread alone, the one in select",
        ),
        ("attached", "attached", {"attach": [1]}, "voluntary context switches of every thread of each worker"),
    ],
    ids=["puma", "attached"],
)
def test_latency_says_whose_sleeps_they_are(tmp_path: Path, server: str, mode: str, spec: dict, said: str) -> None:
    legend = _shown(tmp_path, "latency", server, mode, **spec)
    assert len(legend) == 1 and said in legend[0], legend


def test_the_built_in_workers_keep_the_legends_words(tmp_path: Path) -> None:
    assert _shown(tmp_path, "latency", "builtin", "epoll") == []  # one thread each: nothing to tell apart
    (legend,) = _shown(tmp_path, "run", "builtin", "blocking")
    assert "sleeps: voluntary context switches (times the worker blocked)" in legend, legend


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
