"""observe --port A of a Node cluster serving two ports under SCHED_RR (the primary accepts every connection on both
and passes each to a worker) says the primary's accepts of port A alone: 'it accepted N while observed' counted B's
too (probes/accept_ports.py: each accept placed by the listener it was asked of).

The witness is Node's: each worker answers with the port its server listens on, so the replies count each port's."""

from __future__ import annotations

import http.client
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from node_clusters import kept_node_cluster

from accept_order.experiments.observe.run import observe
from accept_order.servers.launched.base import free_port
from accept_order.servers.launched.node import node_missing

if node_missing():
    pytest.skip(f"node: {node_missing()}", allow_module_level=True)

CAP_S = 120.0
ON_A, ON_B = 3, 5

# workers serve PORT and OTHER; the primary writes READY once all 2 x 2 servers listen
SCRIPT = r"""
'use strict';
const cluster = require('node:cluster');
const http = require('node:http');
const fs = require('node:fs');
const [port, other, ready] = process.argv.slice(2);
cluster.schedulingPolicy = cluster.SCHED_RR;
if (cluster.isPrimary) {
  let listening = 0;
  cluster.on('listening', () => { if (++listening === 4) fs.writeFileSync(ready, String(process.pid)); });
  for (let i = 0; i < 2; i++) cluster.fork();
} else {
  for (const p of [+port, +other]) {
    const server = http.createServer((req, res) => res.end(`${p}\n`));
    server.keepAliveTimeout = 0;
    server.listen(p, '127.0.0.1');
  }
}
"""


@pytest.fixture()
def cluster(tmp_path: Path) -> Iterator[tuple[int, int, int]]:
    """(port A, port B, the primary's pid)."""
    b = free_port("127.0.0.1")
    with kept_node_cluster(SCRIPT, tmp_path, [str(b)], 30) as (a, primary):
        yield a, b, primary


def get(port: int) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/", headers={"Connection": "close"})
        return int(connection.getresponse().read())
    finally:
        connection.close()


def test_the_acceptor_s_count_is_port_a_s(cluster: tuple[int, int, int]) -> None:
    a, b, primary = cluster
    started, done, answered, failed = threading.Event(), threading.Event(), [], []

    def load() -> None:
        try:
            if started.wait(CAP_S):
                answered.extend(get(b) for _ in range(ON_B))
                answered.extend(get(a) for _ in range(ON_A))
        except BaseException as exc:  # said by the test, not lost in the thread
            failed.append(exc)
        finally:
            done.set()

    threading.Thread(target=load, daemon=True).start()
    result = observe(port=a, duration_s=CAP_S, on_snapshot=lambda _: started.set(), until=done)
    assert not failed, failed
    assert answered.count(a) == ON_A and answered.count(b) == ON_B  # the witness: each reply names its port
    counted = re.search(r"it accepted ([\d,]+) while observed", result.source)
    if counted is None:
        pytest.skip(f"the acceptor's accepts were not counted: {result.source}")
    assert f"pid {primary} accepts each connection" in result.source, result.source
    assert int(counted.group(1)) == ON_A, result.source  # was ON_A + ON_B
