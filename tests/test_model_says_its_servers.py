"""The latency model says what it assumed of a Node cluster and of Puma's workers, truly.

A Node cluster (Debian's nodejs) under its default SCHED_RR, attached (3 workers, 'latency --attach -n 2000 -c 8',
Linux 6.18, 2 vCPUs): the kernel counted 2,000 accepts by the primary and none by the workers, and the model said
'its 3 workers take from its one listener: one accept queue, shared' and modelled it so. The primary accepts every
connection and hands each on over a Unix socket: modelled round-robin now, as the launched Node's SCHED_RR mode is,
and said so. Puma's workers (Debian's puma, 'latency --server puma -w 3') are each a pool of up to 5 threads; the
model counts each one server, one request at a time, which it now says, with when that holds."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import run_cli
from node_clusters import kept_node_cluster
from test_attached_listener_queues_model import WORKERS, attached

from accept_order.core.spec import ServerSpec
from accept_order.experiments.latency.model_check import predict
from accept_order.experiments.latency.model_queues import queues_text
from accept_order.experiments.latency.model_servers import servers_text
from accept_order.probes.listeners import listening_sockets
from accept_order.probes.owner import socket_holders
from accept_order.servers.launched.node import node_missing

TIMEOUT_S = 30.0
NONE_HELD = {"listeners": 1, "workers": [[]] * WORKERS, "held": [[]] * WORKERS}
COUNTED = {"available": True, "counts": {str(4243 + i): 0 for i in range(WORKERS)}, "empty": {}}


def test_workers_holding_no_listener_are_fed_in_turn_by_their_master() -> None:
    plain = attached(NONE_HELD, rows=1)
    fed = replace(plain, evidence={**plain.evidence, "accept_counts": {**COUNTED, "master_accepted": 1000}})
    model = predict(fed)
    assert model is not None and model.discipline == "round-robin", model  # was 'shared (all)'
    said = queues_text(replace(fed, model=model))
    assert said is not None and said.startswith(
        "Model: queue round-robin: none of its 4 workers holds its one listener: its master (pid 4242) does, accepts "
        "every connection (the kernel counted 1,000 accepts by it and none by them) and hands each to a worker"
    ), said
    assert "take from its one listener" not in said
    uncounted = predict(plain)  # no kernel count of the master's accepts: the same queue, said assumed
    assert uncounted is not None and uncounted.discipline == "round-robin"
    said = queues_text(replace(plain, model=uncounted))
    assert said is not None and said.startswith("Model: queue round-robin assumed:") and "not counted" in said, said
    # workers that hold the listener (nginx's, gunicorn's) share its queue as before
    shared = attached({**NONE_HELD, "held": [[0]] * WORKERS}, rows=1)
    assert (model := predict(shared)) is not None and model.discipline == "shared", model
    said = queues_text(replace(shared, model=model))
    assert said is not None and "its 4 workers take from its one listener" in said, said


def _pooled(threads: int, kind: str = "attached") -> str | None:
    plain = attached(None, rows=1)
    read = [{"pid": 4243 + i, "threads": threads, "looks": 0, "idle": 0, "waits": {}} for i in range(WORKERS)]
    server = plain.server if kind == "attached" else ServerSpec(kind=kind, mode="cluster", workers=WORKERS)
    return servers_text(
        replace(plain, server=server, evidence={**plain.evidence, "busy_waits": {"span_s": 1.0, "workers": read}})
    )


def test_workers_of_several_threads_are_said_to_be_counted_one_server_each() -> None:
    said = _pooled(7)
    assert said is not None and said.startswith(
        "Model: its 4 workers are the servers counted, one request at a time each, though each is a process of 7 "
        "threads: right where they compute one at a time under one lock"
    ), said
    puma = _pooled(7, "puma")
    assert puma is not None and "(Puma's pool of up to 5 threads in each, 'threads 0, 5' in the config" in puma, puma
    assert _pooled(1) is None  # one thread a worker: one request at a time, nothing to say


@pytest.fixture
def node_rr(tmp_path: Path) -> Iterator[tuple[int, int]]:
    if node_missing():
        pytest.skip(f"node: {node_missing()}")
    script = """'use strict';
const cluster = require('node:cluster');
const http = require('node:http');
const fs = require('node:fs');
const [port, ready] = process.argv.slice(2);
cluster.schedulingPolicy = cluster.SCHED_RR;
if (cluster.isPrimary) {
  let listening = 0;
  cluster.on('listening', () => { if (++listening === 2) fs.writeFileSync(ready, String(process.pid)); });
  for (let i = 0; i < 2; i++) cluster.fork();
} else {
  http.createServer((req, res) => res.end('hi\\n')).listen(+port, '127.0.0.1');
}
"""
    with kept_node_cluster(script, tmp_path, [], TIMEOUT_S) as (port, primary):
        yield port, primary


def test_an_attached_node_cluster_is_modelled_as_its_primary_hands_on(node_rr: tuple[int, int], tmp_path: Path) -> None:
    port, primary = node_rr
    workers = [int(p) for p in Path(f"/proc/{primary}/task/{primary}/children").read_text().split()]
    listener = {row.inode for row in listening_sockets(port)}
    assert set(socket_holders(listener, [primary, *workers])) == {primary}  # /proc: the workers cannot accept
    out = tmp_path / "latency.json"
    args = ["latency", "--attach", str(primary), "--port", str(port), "--protocol", "http", "-n", "600", "-c", "4"]
    result = run_cli([*args, "--json", str(out)], columns=400)
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["model"]["discipline"] == "round-robin"
    said = " ".join(result.output.split())
    assert f"none of its 2 workers holds its one listener: its master (pid {primary}) does" in said, said
    assert "take from its one listener" not in said


@pytest.mark.skipif(shutil.which("puma") is None, reason="needs Debian's puma")
def test_a_launched_puma_is_said_counted_one_server_a_worker(tmp_path: Path) -> None:
    out = tmp_path / "latency.json"
    result = run_cli(
        ["latency", "--server", "puma", "-w", "2", "-n", "300", "-c", "4", "--json", str(out)], columns=400
    )
    assert result.exit_code == 0, result.output
    read = json.loads(out.read_text())["evidence"]["busy_waits"]["workers"]
    threads = [w["threads"] for w in read]  # /proc/PID/task as the run started: the server thread, the pool's, ...
    assert len(threads) == 2 and min(threads) >= 2, read
    said = " ".join(result.output.split())
    assert (
        "Model: its 2 workers are the servers counted, one request at a time each, though each is a process of" in said
    )
    assert "Puma's pool of up to 5 threads in each" in said, said
