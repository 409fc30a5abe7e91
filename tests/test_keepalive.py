"""Several requests per connection (--requests-per-connection) over the built-in workers.

The witnesses: each worker's own counters (requests it answered, connections it accepted, the most it held
at once) against the client's attribution (each request by its own reply, each connection by its first),
and the kernel's accept counts (bpftrace on sys_exit_accept4) for the modes whose workers call accept().
A load of one request per connection stays as it was: its spec, its file and its client loop.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import run_cli

from accept_order.core.protocol import HTTP, HTTP_KEEPALIVE, KEEP_LINE, LINE
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.loads.drive_loop import DriverConfig
from accept_order.loads.generator import LoadGenerator, run_load
from accept_order.probes.accepts import AcceptCounter
from accept_order.servers.modes import MODES
from accept_order.servers.pool import WorkerPool

WORKERS = 3
AVAILABLE = [name for name, mode in MODES.items() if mode.unavailable() is None]
# Accepts the kernel sees as a worker's accept4: not fd-pass's (its acceptor accepts) nor io_uring's (the
# ring accepts for the worker, no syscall).
SYSCALL_ACCEPTS = {"fd-pass", "io-uring"}
needs_bpftrace = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("bpftrace") is None, reason="needs root and bpftrace (eBPF tracepoints)"
)


def kept_load(requests: int, concurrency: int, per: int, **rest: object) -> ConcurrentLoad:
    return ConcurrentLoad(
        connections=requests, concurrency=concurrency, driver_procs=1, requests_per_connection=per, **rest
    ).validated()  # type: ignore[arg-type]


@pytest.mark.parametrize("mode", AVAILABLE)
def test_every_request_is_the_worker_that_holds_its_connection(mode: str) -> None:
    """K = 5 over 6 connections and 3 workers: what the replies say each worker served is what each worker
    counted, request for request and connection for connection, and the kernel's accepts agree."""
    load = kept_load(600, 6, 5)
    counting = needs_kernel = mode not in SYSCALL_ACCEPTS and os.geteuid() == 0 and shutil.which("bpftrace")
    with WorkerPool(ServerSpec(mode=mode, workers=WORKERS, keepalive=True)) as pool:
        counter = AcceptCounter(pool.pids) if counting else None
        if counter is not None:
            counter.start()
            needs_kernel = counter.attached
        try:
            result = run_load(pool.address, pool.attribution, load, protocol=pool.protocol.persistent() or LINE)
            kernel = counter.stop() if counter is not None else None
        finally:
            if counter is not None:
                counter.close()
        counters = pool.stop()
    assert not result.errors, result.errors
    assert sum(result.served.values()) == 600
    # each connection carried 5 requests, but for the last of each slot, cut short when the 600 were done
    assert result.connections is not None and 600 // 5 <= sum(result.connections.values()) < 600 // 5 + 6
    for c in counters:
        assert c.requests == result.served.get(c.index, 0), (mode, c)
        assert c.accepts == result.connections.get(c.index, 0), (mode, c)
        # a worker may still hold connections the client has closed (their end not read yet): no upper bound
        assert c.held_peak is not None and (c.held_peak >= 1) == (c.accepts > 0)
    if needs_kernel:
        assert kernel is not None and kernel.available, kernel
        assert {pid: n for pid, n in kernel.counts.items() if n} == {c.pid: c.accepts for c in counters if c.accepts}, (
            mode
        )


def test_a_request_time_is_per_request() -> None:
    """Each request is one sample of the histogram; the connections carry K each."""
    load = kept_load(300, 3, 10)
    with WorkerPool(ServerSpec(mode="epoll", workers=2, keepalive=True)) as pool:
        result = run_load(pool.address, pool.attribution, load, protocol=KEEP_LINE)
    assert result.histogram.count == 300
    # 10 per connection, but for the last of each of the 3 slots, cut short when the 300 were done
    assert result.connections is not None and 30 <= sum(result.connections.values()) < 33
    assert result.by_worker is not None and sum(h.count for h in result.by_worker.values()) == 300


def test_connections_that_live_for_the_whole_run_are_held_at_its_end() -> None:
    """K = 0: the -c connections are never closed by the client before the load ends; every one is held
    then, by the worker that accepted it."""
    load = kept_load(500, 5, 0)
    with WorkerPool(ServerSpec(mode="epoll", workers=WORKERS, keepalive=True)) as pool:
        result = run_load(pool.address, pool.attribution, load, protocol=KEEP_LINE)
        counters = pool.stop()
    assert result.connections is not None and result.held is not None
    assert sum(result.connections.values()) == 5 and dict(result.held) == dict(result.connections)
    assert [c.held_peak for c in counters] == [result.connections.get(i, 0) for i in range(WORKERS)]


def test_one_request_per_connection_is_as_before() -> None:
    """K = 1 without a pool: the one-request loop (drive_loop.py), a spec and a file without the new keys."""
    load = ConcurrentLoad(connections=100, concurrency=4, driver_procs=1).validated()
    assert "requests_per_connection" not in load.to_dict() and "pool" not in load.to_dict()
    assert not load.keeps_connections
    assert not DriverConfig(0, ("127.0.0.1", 1), None, LINE, 1, None, 1, 1.0).kept  # type: ignore[arg-type]
    assert "keepalive" not in ServerSpec().to_dict()
    with WorkerPool(ServerSpec(mode="epoll", workers=2)) as pool:
        assert pool.protocol is LINE
        result = run_load(pool.address, pool.attribution, load, protocol=pool.protocol.closing())
        counters = pool.stop()
    assert result.connections is None and result.held is None and result.by_worker is None
    summary = result.summary(2).to_dict()
    assert not {"connections", "held_at_end", "worker_histograms", "pool"} & set(summary)
    assert all(c.requests is None and "requests" not in c.to_dict() for c in counters)


def test_the_reply_framing_of_each_protocol() -> None:
    assert LINE.persistent() is KEEP_LINE and HTTP.persistent() is HTTP_KEEPALIVE
    assert KEEP_LINE.reply_end(b"worker 1 pid 2\nworker") == 15 and KEEP_LINE.reply_end(b"worker 1") == 0
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n"
    assert HTTP_KEEPALIVE.reply_end(head + b"worker 12\r\nnext") == len(head) + 11
    assert HTTP_KEEPALIVE.reply_end(head + b"worker") == 0
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\nworker 12\r\n0\r\n\r\n"
    assert HTTP_KEEPALIVE.reply_end(chunked + b"HTTP") == len(chunked)


def test_the_option_on_the_command_line(tmp_path: Path) -> None:
    """latency --requests-per-connection: the file names the kept figures, show and the CSV say them."""
    out = tmp_path / "k.json"
    result = run_cli(
        [
            "latency",
            "-m",
            "epoll",
            "-w",
            "2",
            "-n",
            "400",
            "-c",
            "4",
            "--requests-per-connection",
            "20",
            "--json",
            str(out),
        ]  # fmt: skip
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["load"]["requests_per_connection"] == 20 and sum(doc["served"]) == 400
    assert 20 <= sum(doc["connections"]) < 24 and len(doc["worker_histograms"]) == 2
    assert [c["requests"] for c in doc["counters"]] == doc["served"]
    assert "kept connections per worker" in result.stdout and "400 requests" in result.stdout
    shown = run_cli(["show", str(out), "--format", "csv", "--table", "connections"])
    assert shown.exit_code == 0, shown.output
    rows = shown.stdout.strip().splitlines()
    assert rows[0].startswith("run,worker,accepted") and len(rows) == 3
    assert sum(int(r.split(",")[5]) for r in rows[1:]) == 400


def test_a_load_that_keeps_connections_has_a_generator_of_its_own_loop() -> None:
    load = kept_load(10, 2, 0, pool=True)
    with LoadGenerator(("127.0.0.1", 1), None, load, KEEP_LINE) as gen:  # type: ignore[arg-type]
        assert all(c.kept and c.pool and c.per_connection == 0 for c in gen.configs)
