"""observe of a Node cluster that holds kept connections. Under SCHED_RR (Node's default) only the primary holds
the listener: it accepts and passes each connection to a worker over a Unix socket. observe took the holders of
the listener for the workers, and printed 'node, port P, 1 worker' (the primary) holding none, while the three
workers held two each (ss -tnp and inspect said so). The workers are now the processes inspect's look finds fed
by the acceptor, and their connections are counted where they are held. SCHED_NONE (every worker holds the
listener) reads as before. Checked against the workers' own count of their open connections."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from conftest import wait_for
from node_clusters import kept_node_cluster, started_node_cluster
from test_bpftrace_ignores_sigint import WATCHED, fake_bpftrace

from accept_order.experiments.observe.run import observe
from accept_order.experiments.observe.server import find_server
from accept_order.servers.launched.node import node_missing

if node_missing():
    pytest.skip(f"node: {node_missing()}", allow_module_level=True)

WORKERS = 3
KEPT = 6  # connections the test holds open, as wrk -c6 did

# Each worker answers `pid open` where open is its own count of the connections it holds now (node's count)
SCRIPT = r"""
'use strict';
const cluster = require('node:cluster');
const http = require('node:http');
const fs = require('node:fs');
const [port, policy, ready] = process.argv.slice(2);
cluster.schedulingPolicy = cluster[policy];
if (cluster.isPrimary) {
  let listening = 0;
  cluster.on('listening', () => { if (++listening === 3) fs.writeFileSync(ready, String(process.pid)); });
  for (let i = 0; i < 3; i++) cluster.fork();
} else {
  let open = 0;
  const server = http.createServer((req, res) => res.end(`${process.pid} ${open}\n`));
  server.on('connection', (sock) => { open += 1; sock.on('close', () => { open -= 1; }); });
  server.keepAliveTimeout = 0;
  server.listen(+port, '127.0.0.1');
}
"""


@pytest.fixture(scope="module")
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, int]]:
    """A Node cluster of 3 workers on a free port under the policy asked for: (port, the primary's pid). One a policy
    for the module: its tests only look at it (find_server, observe) and the one that connects closes what it opened,
    so none disturbs the next; a cluster's start (a primary and 3 workers, ~0.3 CPU-s) is most of a test's CPU."""
    with kept_node_cluster(SCRIPT, tmp_path_factory.mktemp("node"), [request.param], 30) as (port, primary):
        yield port, primary


def ask(conn: socket.socket) -> tuple[int, int]:
    """One request on a kept connection: (the worker's pid, the connections it says it holds)."""
    conn.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
    data = b""
    while not data.endswith(b"\n") or b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        assert chunk, "the server closed a kept connection"
        data += chunk
    pid, held = data.partition(b"\r\n\r\n")[2].split()
    return int(pid), int(held)


def held_by_node(conns: list[socket.socket]) -> dict[int, int]:
    """Per worker pid: the open connections it counts itself, asked on the kept connections."""
    return dict(ask(conn) for conn in conns)


@pytest.mark.parametrize("cluster", ["SCHED_RR", "SCHED_NONE"], indirect=True)
def test_observe_counts_the_connections_where_the_workers_hold_them(cluster: tuple[int, int]) -> None:
    port, primary = cluster
    conns = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(KEPT)]
    try:
        counted = wait_for(
            lambda: held_by_node(conns), lambda c: sum(c.values()) == KEPT, 10, "every connection to be in a worker"
        )
        result = observe(port=port, duration_s=1.0, trace=False)
        assert held_by_node(conns) == counted  # nothing moved while observed
    finally:
        for conn in conns:
            conn.close()
    assert result.master == primary
    workers = {w.pid: w for w in result.workers}
    assert len(workers) == WORKERS and primary not in workers, result.workers
    assert counted.keys() <= workers.keys()
    assert {pid: w.connections_held for pid, w in workers.items()} == {pid: counted.get(pid, 0) for pid in workers}
    assert {pid: w.count for pid, w in workers.items()} == {pid: counted.get(pid, 0) for pid in workers}


@pytest.mark.parametrize("cluster", ["SCHED_RR"], indirect=True)
def test_sched_rr_names_the_acceptor_and_counts_without_tracing_accepts(cluster: tuple[int, int]) -> None:
    """The workers never accept (the primary does): their accepts are not traced as if they did, and the
    result says why its counts are sampled from the workers' fd tables."""
    port, primary = cluster
    watched = find_server(port=port)
    assert watched.acceptor == primary and watched.master == primary and len(watched.workers) == WORKERS
    result = observe(port=port, duration_s=0.3, trace=True)
    assert not result.traced and f"pid {primary} accepts each connection" in result.source, result.source


@pytest.mark.parametrize("cluster", ["SCHED_NONE"], indirect=True)
def test_sched_none_reads_as_before(cluster: tuple[int, int]) -> None:
    """Every worker holds the listener: no acceptor, the three holders are the workers (and traced as before)."""
    port, primary = cluster
    watched = find_server(port=port)
    assert watched.acceptor is None and watched.master == primary and len(watched.workers) == WORKERS
    assert primary not in watched.workers


@pytest.mark.skipif(os.geteuid() != 0, reason="the acceptor's accepts are traced only as root")
@pytest.mark.parametrize("cluster", ["SCHED_RR"], indirect=True)
def test_an_acceptor_count_that_is_a_reading_says_so(
    cluster: tuple[int, int], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """bpftrace never ran END on the acceptor (a fake that ignores SIGINT after its readings): the count the source
    names is its last reading's, and the notes say so of the acceptor, as they do of traced workers."""
    port, primary = cluster
    fake_bpftrace(monkeypatch, tmp_path, WATCHED)  # its reading: the acceptor accepted 7
    result = observe(port=port, duration_s=0.5, trace=True)
    assert f"pid {primary} accepts each connection" in result.source and "it accepted 7 while" in result.source
    said = f"pid {primary}'s count of its accepts: bpftrace did not run its END block within 5 s of SIGINT (it was "
    assert any(note.startswith(f"{said}killed): the counts are its last periodic reading") for note in result.notes)


def test_a_kept_cluster_dies_with_the_thread_that_started_it(tmp_path: Path) -> None:
    """The module's cluster outlives each test on purpose, but not pytest: a SIGTERM or SIGKILL of pytest runs no
    teardown, and a cluster started as the fixture starts it (node_clusters.started_node_cluster) stayed, holding its
    port. Its primary now dies with the thread that started it (PR_SET_PDEATHSIG), as it would with pytest, and its
    workers with it. A thread that ends, not a process killed: the signal is tied to the thread, and a thread costs
    nothing to start (a Python process importing the helper was ~0.2 CPU-s)."""
    script, ready = tmp_path / "cluster.js", tmp_path / "ready"
    script.write_text(SCRIPT)
    started: list[subprocess.Popen[bytes]] = []
    counted = threading.Event()  # the starter ends once the cluster's processes are known

    def start() -> None:
        started.append(started_node_cluster(script, 0, ["SCHED_RR"], ready))
        counted.wait(60)

    starter = threading.Thread(target=start)
    cluster: list[psutil.Process] = []
    try:
        starter.start()
        wait_for(
            lambda: (ready.exists() and ready.read_text()) or (started and started[0].poll() is not None),
            bool,
            30,
            "the cluster's workers to listen",
        )
        primary = psutil.Process(started[0].pid)
        cluster = [primary, *primary.children()]
        assert len(cluster) == 1 + WORKERS, cluster
        counted.set()
        starter.join(30)
        wait_for(lambda: [p.pid for p in cluster if running(p)], lambda left: not left, 30, "the cluster to end")
    finally:
        for proc in cluster:  # the workers are not our children: the no-child check would not see them
            with contextlib.suppress(psutil.Error):
                proc.kill()
        counted.set()
        starter.join(30)
        for proc in started:
            proc.kill()
            proc.wait(30)


def running(proc: psutil.Process) -> bool:
    """Alive: not gone and not a zombie (the primary is our child, and a zombie until the no-child check reaps it)."""
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
