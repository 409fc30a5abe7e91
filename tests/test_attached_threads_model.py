"""latency --attach of HAProxy with `nbthread 2`: the queueing model counted one worker (the one process), so its
p99 came out 25x the prediction, and the heading said 'work none' of a server whose work this tool did not set.
The model now counts the threads of a process whose threads are its workers (the registry's threads_are_workers),
says it cannot judge where they are not or where nobody knows which thread holds a kept connection, and the
heading says the work is the server's own."""

from __future__ import annotations

import io
import json
import shutil
import socket
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import run_cli, wait_for
from rich.console import Console, RenderableType
from test_cut_short_run_tails import run
from test_rough_edges_attached_threads import HAPROXY_CFG, threaded

from accept_order.core.measures import WorkerCounters
from accept_order.core.spec import ServerSpec
from accept_order.experiments.latency.headlines import headline
from accept_order.experiments.latency.model_check import predict
from accept_order.experiments.latency.report import latency_report
from accept_order.experiments.latency.result import LatencyResult

SERVICE_US = 100  # each connection's CPU in the fake run below


def text(renderable: RenderableType) -> str:
    console = Console(width=1000, record=True, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.export_text()


def attached(program: str, count: int = 2) -> LatencyResult:
    """1,000 connections to one attached process of `count` threads, 16 clients, its CPU 100 µs a connection."""
    r = run("attached", [1000] * 1000)
    server = ServerSpec(kind="attached", mode="attached", workers=1, port=18432, attach=(4242,), protocol="http")
    load = replace(r.load, concurrency=16)
    counters = (WorkerCounters(0, 4242, None, None, None, None, 10, 10, 1000 * SERVICE_US / 1e6),)
    return replace(r, server=server, load=load, served=(1000,), counters=counters, evidence=threaded(program, count))


def test_the_model_counts_haproxys_threads_as_its_servers() -> None:
    two = predict(attached("haproxy"))
    assert two is not None and two.workers == 2, two
    # 16 clients on 2 servers of 100 µs: 0.8 ms each (Little's law), where one server would make it 1.6 ms
    assert two.p50_ms == pytest.approx(16 * SERVICE_US / 2 / 1000, rel=0.1), two
    one = predict(replace(attached("haproxy"), evidence={}))  # no threads seen: the process is the one worker
    assert one is not None and one.workers == 1 and one.p50_ms == pytest.approx(1.6, rel=0.1), one
    said = text(latency_report(replace(attached("haproxy"), model=two)))
    assert "Model: pid 4242 (haproxy)'s 2 threads are the servers counted (each accepts and serves)." in said


def test_the_model_says_it_cannot_judge_threads_that_are_not_workers() -> None:
    caddy = attached("caddy", 8)
    assert predict(caddy) is None
    said = text(latency_report(caddy))
    assert "Model: not judged: pid 4242 (caddy) serves with 8 threads that are not one worker each" in said, said
    kept = replace(attached("haproxy"), load=replace(attached("haproxy").load, requests_per_connection=0))
    assert predict(kept) is None
    assert "which of them holds each kept connection is not known" in text(latency_report(kept))


@pytest.mark.parametrize("program", ["node", "uvicorn", "nginx"])
def test_a_process_whose_event_loop_runs_every_request_is_one_server(program: str) -> None:
    """Node's 7 threads (libuv's pool) run JavaScript on one: modelled as the one worker it was before threads
    were read (a review found 'not judged' for it), and said so beside the model."""
    loop = attached(program, 7)
    one = predict(loop)
    assert one is not None and one.workers == 1 and one.p50_ms == pytest.approx(1.6, rel=0.1), one
    said = text(latency_report(replace(loop, model=one)))
    assert f"Model: pid 4242 ({program}) runs every request on one of its threads (its event loop): one server." in said
    assert "not judged" not in said, said


def test_the_heading_of_an_attached_server_claims_no_work() -> None:
    said = headline(attached("haproxy")).plain
    assert "work none" not in said and "1 worker of 2 threads, the server's own work;" in said, said
    builtin = run("epoll", [1000] * 10)
    assert "2 workers, work none;" in headline(builtin).plain  # a server this tool started: as before


def test_latency_attach_to_a_threaded_haproxy_models_two_servers(tmp_path: Path, free_port: int) -> None:
    binary = shutil.which("haproxy")
    if binary is None:
        pytest.skip("haproxy is not installed")
    config = tmp_path / "haproxy.cfg"
    config.write_text(HAPROXY_CFG.format(port=free_port))
    server = subprocess.Popen([binary, "-db", "-f", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:

        def listening() -> bool:
            try:
                socket.create_connection(("127.0.0.1", free_port), timeout=1).close()
            except OSError:
                return False
            return True

        wait_for(lambda: (server.poll(), listening()), lambda s: s[0] is not None or s[1], 10.0, "haproxy listening")
        assert server.poll() is None, server.stderr.read() if server.stderr else ""
        out = tmp_path / "latency.json"
        args = ["latency", "--attach", str(server.pid), "--port", str(free_port), "--protocol", "http"]
        result = run_cli([*args, "-n", "300", "-c", "4", "--json", str(out)], columns=400)
        assert result.exit_code == 0, result.output
        doc = json.loads(out.read_text())
        assert doc["server"]["workers"] == 1 and doc["evidence"]["threads"]["count"] == 2
        assert doc["model"]["workers"] == 2, doc["model"]
        assert f"pid {server.pid} (haproxy)'s 2 threads are the servers counted" in result.stdout
        assert "work none" not in result.stdout
    finally:
        server.terminate()
        server.wait(10)
        if server.stderr is not None:
            server.stderr.close()
