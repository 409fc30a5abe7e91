"""latency --attach of a Node cluster (Debian's nodejs) under its default SCHED_RR: the primary alone holds the
listener, accepts every connection and passes it to a worker over a Unix socket. The kernel's accept count traced
the workers, which accept nothing, and the report read 'the table places 0 of the N served: the other N were
accepted in no accept call of pid P's children ... through io_uring, or by a process that is not its child', with
0 served beside each worker. The count now takes in the master, and the report says that the master accepted them
and that which worker served each is not known ('-', not 0).

Witnesses the tool did not produce: /proc (the primary holds the listener, its workers do not) and the workers'
own log (a line per request, by pid), whose total is what the kernel counts for the primary."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import wait_for
from node_clusters import kept_node_cluster
from test_attach import accept_order

from accept_order.experiments.observe.run import observe
from accept_order.probes.listeners import listening_sockets
from accept_order.probes.owner import socket_holders
from accept_order.servers.launched.node import node_missing

if node_missing():
    pytest.skip(f"node: {node_missing()}", allow_module_level=True)

WORKERS = 2
CONNECTIONS = 200
TIMEOUT_S = 30.0

# Each worker logs its pid for each request it answers (the server's own log), and answers without naming itself
# as `worker PID` does: the tool cannot attribute from the reply
SCRIPT = r"""
'use strict';
const cluster = require('node:cluster');
const http = require('node:http');
const fs = require('node:fs');
const [port, log, ready] = process.argv.slice(2);
cluster.schedulingPolicy = cluster.SCHED_RR;
if (cluster.isPrimary) {
  let listening = 0;
  cluster.on('listening', () => { if (++listening === WORKERS) fs.writeFileSync(ready, String(process.pid)); });
  for (let i = 0; i < WORKERS; i++) cluster.fork();
} else {
  http.createServer((req, res) => { fs.appendFileSync(log, `${process.pid}\n`); res.end('hi\n'); })
    .listen(+port, '127.0.0.1');
}
""".replace("WORKERS", str(WORKERS))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, int, Path]]:
    """(port, the primary's pid, the workers' log). One for the module: its two tests only drive it and read it, each
    reading the log from where it stood when the test began (logged_since); a cluster's start (a primary and 2
    workers, ~0.25 CPU-s) was a third of a test's CPU."""
    folder = tmp_path_factory.mktemp("node")
    log = folder / "requests.log"
    with kept_node_cluster(SCRIPT, folder, [str(log)], TIMEOUT_S) as (port, primary):
        yield port, primary, log


def logged_since(log: Path, before: int) -> list[str]:
    """The pids the workers logged after the first `before` lines (the requests of the test that counted them)."""
    return log.read_text().split()[before:] if log.exists() else []


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("bpftrace") is None, reason="needs root and bpftrace")
def test_the_kernels_count_of_a_node_cluster_is_its_primarys(cluster: tuple[int, int, Path], tmp_path: Path) -> None:
    port, primary, log = cluster
    before = len(logged_since(log, 0))
    workers = [int(p) for p in Path(f"/proc/{primary}/task/{primary}/children").read_text().split()]
    assert len(workers) == WORKERS
    listener = {row.inode for row in listening_sockets(port)}
    assert set(socket_holders(listener, [primary, *workers])) == {primary}  # /proc: the workers cannot accept
    out = tmp_path / "latency.json"
    done = accept_order(
        "latency", "--attach", str(primary), "--port", str(port), "--protocol", "http", "-n", str(CONNECTIONS),
        "-c", "2", "--json", str(out),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc: dict[str, Any] = json.loads(out.read_text())
    counts = doc["evidence"]["accept_counts"]
    if not counts["available"]:
        pytest.skip(f"no kernel accept counts here: {counts['why']}")
    logged = logged_since(log, before)
    assert len(logged) == doc["summary"]["count"] == CONNECTIONS  # one request a connection
    assert set(map(int, logged)) <= set(workers)
    assert counts["master_accepted"] == CONNECTIONS, counts  # the kernel: the primary accepted every one
    assert {int(pid): n for pid, n in counts["counts"].items()} == {pid: 0 for pid in workers}
    said = " ".join(done.stdout.split())
    assert f"pid {primary}, the attached master, accepted {CONNECTIONS:,} connections itself" in said, said
    assert "the table places" not in said and "no accept call" not in said
    table = done.stdout[done.stdout.index("served per worker") :].splitlines()
    rows = [line.split() for line in table if line.split()[:2] in ([str(i), str(p)] for i, p in enumerate(workers))]
    assert len(rows) == WORKERS and all(row[2] == "-" for row in rows), table[:8]  # not known, not 0


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("bpftrace") is None, reason="needs root and bpftrace")
def test_observe_of_a_node_cluster_counts_the_primarys_accepts_as_its_own(cluster: tuple[int, int, Path]) -> None:
    """observe, traced: the workers are not traced as if they accepted, and the kernel's count, the primary's, is said
    as its: every connection made while observed (at most all the workers logged), none of them a worker's."""
    port, primary, log = cluster
    before = len(logged_since(log, 0))
    stop = threading.Event()

    def connect() -> None:
        while not stop.is_set():
            with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as conn:
                conn.sendall(b"GET / HTTP/1.0\r\nHost: t\r\n\r\n")
                while conn.recv(4096):
                    pass

    client = threading.Thread(target=connect)
    client.start()
    try:
        wait_for(lambda: logged_since(log, before), bool, TIMEOUT_S, "the first request")
        result = observe(port=port, duration_s=1.0, trace=True)
    finally:
        stop.set()
        client.join(TIMEOUT_S)
    assert not result.traced and all(w.accepts is None for w in result.workers), result.workers
    found = re.search(rf"pid {primary} accepts each connection .*; it accepted ([\d,]+) while observed", result.source)
    assert found is not None, result.source
    accepted = int(found.group(1).replace(",", ""))
    assert 0 < accepted <= len(logged_since(log, before)), (accepted, result.source)  # the workers' own log
