"""latency --attach of HAProxy by its threads' ids (nbthread 4): the kernel's accept count of each worker.

bpftrace's `pid` is the process's id, the same for all its threads: the counter's filter `pid == 381` never matched
a thread, and `pid == 380` (the main thread's id, the process's too) matched every thread's accepts. A user's run
read accepted "8 0 0 0", Jain 0.250 over 4 workers, where HAProxy's own count was [4 0 1 4]. Workers that are threads
are counted by their own id now. Witness: HAProxy's `show activity` (its per-thread `accepted`, read over its stats
socket before and after the run).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
from pathlib import Path

import pytest
from conftest import run_cli, wait_for

from accept_order.probes.accept_filter import thread_workers
from accept_order.probes.accepts import program

HAPROXY = shutil.which("haproxy")
BPFTRACE = shutil.which("bpftrace")
THREADS = 4
CONNECTIONS = 16  # kept for the whole run: one accept each, spread over the 4 threads by the kernel's wake-ups

CONFIG = """global
    nbthread {threads}
    stats socket {stats} mode 600 level admin
defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    timeout http-keep-alive 60s
frontend f
    bind 127.0.0.1:{port}
    http-request return status 200 content-type text/plain string "ok"
"""


def test_threads_of_one_process_are_counted_by_their_own_id() -> None:
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        me, mine = os.getpid(), wait_for(lambda: other.native_id, lambda t: t is not None, 5.0, "the thread's id")
        assert mine is not None
        assert thread_workers([me, mine]) == {me, mine}  # two threads of one process: each its own
        assert thread_workers([mine]) == {mine}  # a thread that is not its process's main thread
        assert thread_workers([me]) == frozenset()  # a process, alone: its every thread counts for it
    finally:
        stop.set()
        other.join()
    script = program([me, mine], None, frozenset({me, mine}))
    assert f"(tid == {me} || tid == {mine})" in script, script  # the filter: in the order given
    low, high = sorted((me, mine))  # the key's test: in id order (a thread's id is below its process's after a wrap)
    assert f"@[((tid == {low} || tid == {high}) ? tid : pid)] = count();" in script, script
    assert "(pid == 12 || pid == 34)" in program([12, 34])  # processes: by their process's id, as before


def activity(stats: Path) -> list[int]:
    """HAProxy's own count of the accepts each thread made (`show activity`, line `accepted: TOTAL [ t1 t2 ... ]`)."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(10)
        sock.connect(str(stats))
        sock.sendall(b"show activity\n")
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
    line = next(line for line in out.decode().splitlines() if line.startswith("accepted:"))
    return [int(n) for n in line.split("[")[1].split("]")[0].split()]


@pytest.mark.skipif(HAPROXY is None, reason="haproxy is not installed")
@pytest.mark.skipif(os.geteuid() != 0 or BPFTRACE is None, reason="needs root and bpftrace")
def test_latency_attached_by_haproxys_thread_ids_counts_each_threads_accepts(tmp_path: Path, free_port: int) -> None:
    assert HAPROXY is not None
    stats = tmp_path / "stats.sock"
    config = tmp_path / "haproxy.cfg"
    config.write_text(CONFIG.format(threads=THREADS, stats=stats, port=free_port))
    server = subprocess.Popen([HAPROXY, "-db", "-f", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:

        def ready() -> tuple[int | None, int, bool]:
            try:
                socket.create_connection(("127.0.0.1", free_port), timeout=1).close()
                listening = stats.exists()
            except OSError:
                listening = False
            return server.poll(), len(os.listdir(f"/proc/{server.pid}/task")), listening

        wait_for(ready, lambda s: s[0] is not None or (s[1] == THREADS and s[2]), 15.0, "haproxy's 4 threads listening")
        assert server.poll() is None, server.stderr.read() if server.stderr else ""
        # HAProxy's thread 1 is its main thread; it starts the others in turn, so their ids follow in that order
        tids = sorted(int(t) for t in os.listdir(f"/proc/{server.pid}/task"))
        assert tids[0] == server.pid
        before = activity(stats)  # this query's own connection is in it already
        out = tmp_path / "latency.json"
        args = ["latency", "--attach", ",".join(map(str, tids)), "--port", str(free_port), "--protocol", "http"]
        args += ["--pool", "-c", str(CONNECTIONS), "--requests-per-connection", "0", "--duration", "1s"]
        result = run_cli([*args, "--json", str(out)], columns=300)
        after = activity(stats)  # ... and this one's, accepted by one of the threads
        assert result.exit_code == 0, result.output
        kept = json.loads(out.read_text())["evidence"]["accept_counts"]
        assert kept["available"], kept
        counted = [kept["counts"][str(tid)] for tid in tids]
        haproxys = [a - b for a, b in zip(after, before, strict=True)]
        assert sum(counted) == CONNECTIONS, (counted, haproxys)
        # HAProxy's count is the tool's, thread by thread, plus the one stats connection made after the run
        extra = [h - c for h, c in zip(haproxys, counted, strict=True)]
        assert sorted(extra) == [0] * (THREADS - 1) + [1], (counted, haproxys)
    finally:
        server.terminate()
        server.wait(10)
        if server.stderr is not None:
            server.stderr.close()
