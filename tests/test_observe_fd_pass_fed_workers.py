"""observe takes a server for fd-pass (one acceptor feeding workers over Unix sockets, 7dbf8bf) only where the
acceptor alone holds the listeners. inspect's look names fd-pass wherever one process waits on the listener and
another that holds none waits on a Unix socket the waiter holds: nginx with proxy_cache_path has a cache manager
and a cache loader waiting on their channels, whose other ends the master and the workers hold. With one worker
(or accept_mutex on, where only the lock's holder has the listener in its epoll) observe watched the manager and
the loader as two 'workers' fed by the real one, untraced, and counted nothing of the traffic. nginx's master
holds the listeners too: no acceptor of fd-pass shares them (Node's primary under SCHED_RR and the built-in
mode's acceptor hold them alone; tests/test_node_observe_fed.py keeps those)."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from conftest import wait_for
from nginx_by_hand import nginx_by_hand

from accept_order.experiments.observe.server import find_server

# nginx_by_hand waits for `processes` children: the workers and the cache manager and loader
CONF = """
worker_processes {nginx_workers};
daemon off;
pid {d}/nginx.pid;
events {{ worker_connections 256; {events} }}
http {{
    access_log off;
    proxy_cache_path {d}/cache keys_zone=c:1m;
    server {{ listen 127.0.0.1:{port}; location / {{ return 200 "worker $pid\\n"; }} }}
}}
"""


def holds_a_socket_on(pid: int, port: int) -> bool:
    """Whether `pid` has the port's listener in its fd table (nginx's workers do; its cache processes close it)."""
    listening = set()
    for line in Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[3] == "0A" and int(fields[1].split(":")[1], 16) == port:
            listening.add(f"socket:[{fields[9]}]")
    return any(os.readlink(f"/proc/{pid}/fd/{fd}") in listening for fd in os.listdir(f"/proc/{pid}/fd"))


@pytest.mark.parametrize(("nginx_workers", "events"), [(1, ""), (3, "accept_mutex on;")])
def test_nginx_cache_processes_are_not_taken_for_fed_workers(free_port: int, nginx_workers: int, events: str) -> None:
    processes = nginx_workers + 2  # the cache manager and the cache loader
    with nginx_by_hand(CONF, free_port, processes, 30, nginx_workers=str(nginx_workers), events=events) as nginx:
        workers = [pid for pid in nginx.workers if holds_a_socket_on(pid, free_port)]
        assert len(workers) == nginx_workers  # the others are the cache manager and loader
        watched = find_server(port=free_port)
    assert watched.acceptor is None
    assert sorted(watched.workers) == workers
    assert watched.master == nginx.master


# A Node cluster under SCHED_RR whose last worker's main thread blocks in a futex (Atomics.wait) once it listens
NODE_SCRIPT = r"""
'use strict';
const cluster = require('node:cluster');
const http = require('node:http');
const fs = require('node:fs');
const [port, ready] = process.argv.slice(2);
cluster.schedulingPolicy = cluster.SCHED_RR;
if (cluster.isPrimary) {
  let listening = 0;
  cluster.on('listening', () => { if (++listening === 3) fs.writeFileSync(ready, String(process.pid)); });
  for (let i = 0; i < 3; i++) cluster.fork();
} else {
  http.createServer((req, res) => res.end(`${process.pid}\n`)).listen(+port, '127.0.0.1', () => {
    const block = () => {
      fs.writeFileSync(`${ready}.blocked`, String(process.pid));
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60000);
    };
    if (cluster.worker.id === 3) setTimeout(block, 100);
  });
}
"""
FUTEX = "202"  # x86_64's syscall number, as /proc/PID/syscall gives it


def test_a_node_worker_blocked_in_a_futex_is_still_one_of_the_fed_workers(tmp_path: Path, free_port: int) -> None:
    """The look's sample sees a worker whose main thread waits in a futex (not on its channel) as waiting on
    nothing: observe watched two of the three workers, and lost the third's connections."""
    from accept_order.servers.launched.node import node_binary, node_missing

    if node_missing():
        pytest.skip(f"node: {node_missing()}")
    script, ready = tmp_path / "cluster.js", tmp_path / "ready"
    script.write_text(NODE_SCRIPT)
    proc = subprocess.Popen(
        [node_binary(), str(script), str(free_port), str(ready)],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(lambda: ready.exists() and ready.read_text(), bool, 30, "the cluster's workers to listen")
        workers = sorted(int(p) for p in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split())
        blocked = Path(f"{ready}.blocked")
        pid = int(wait_for(lambda: blocked.exists() and blocked.read_text(), bool, 30, "the last worker to block"))
        wait_for(
            lambda: Path(f"/proc/{pid}/syscall").read_text().split()[0],
            lambda call: call == FUTEX,
            30,
            "the last worker's main thread to block in a futex",
        )
        watched = find_server(port=free_port)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # its workers are in its session: none outlives the test
        proc.wait()
    assert watched.acceptor == proc.pid
    assert sorted(watched.workers) == workers
