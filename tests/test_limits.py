"""A launched server's limits follow the load, and when it runs out of something anyway the report says so
(issue 16, section 4): nginx's worker_connections is sized from the connections the load holds at once,
its open-file limit raised to match, and what nginx logs running out of reaches the report."""

from __future__ import annotations

import resource
from pathlib import Path
from typing import Any

import psutil
import pytest
from rich.console import Console

from accept_order.core.errors import ServerUnavailable
from accept_order.core.spec import ServerSpec
from accept_order.experiments.burst.report import burst_report
from accept_order.experiments.burst.result import BurstResult, BurstRun
from accept_order.experiments.burst.run import BurstPlan, run_bursts
from accept_order.loads.generator import LoadGenerator
from accept_order.probes.listeners import listening_sockets
from accept_order.render.evidence import evidence_report
from accept_order.servers.launched import nginx_config
from accept_order.servers.launched.nginx import NginxServer
from accept_order.servers.launched.nginx_config import NGINX_MODES, nginx_binary, render_config


def _nginx_missing() -> str | None:
    try:
        nginx_binary()
    except ServerUnavailable as exc:
        return str(exc)
    return None


needs_nginx = pytest.mark.skipif(_nginx_missing() is not None, reason=f"needs nginx: {_nginx_missing()}")


def text(renderable: object) -> str:
    console = Console(width=400, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text()


def config(in_flight: int, workers: int = 3) -> str:
    return render_config(
        "/nonexistent/dir",
        NGINX_MODES["accept-mutex"],
        host="127.0.0.1",
        port=8080,
        workers=workers,
        backlog=511,
        multi_accept=False,
        cpus=(),
        work_us=0,
        work_iters=0,
        in_flight=in_flight,
    )


class Limits:
    RLIMIT_NOFILE, RLIM_INFINITY = resource.RLIMIT_NOFILE, resource.RLIM_INFINITY

    def __init__(self, soft: int, hard: int) -> None:
        self.limits = (soft, hard)

    def getrlimit(self, which: int) -> tuple[int, int]:
        return self.limits


def test_worker_connections_follow_the_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nginx_config, "resource", Limits(1 << 20, 1 << 20))
    # any one worker may hold the whole load (accept_mutex hands a burst to the lock holder), plus its
    # listeners and nginx's own
    assert "worker_connections 25067;" in config(25000)
    assert "worker_connections 1024;" in config(0)  # one connection at a time: room for a few more by hand
    assert "worker_rlimit_nofile" not in config(25000)  # the inherited limit holds them


def test_the_workers_open_file_limit_is_raised_to_hold_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nginx_config, "resource", Limits(20000, 100000))
    assert "worker_rlimit_nofile 25131;" in config(25000)  # 25067 connections and 64 files of its own
    monkeypatch.setattr(nginx_config, "resource", Limits(20000, 22000))
    assert "worker_rlimit_nofile 22000;" in config(25000)  # no further than the hard limit: never a failed start


def test_a_shortage_in_the_error_log_is_found_and_reported(tmp_path: Path) -> None:
    server = NginxServer(ServerSpec(kind="nginx", mode="epoll"))
    server.directory = str(tmp_path)
    (tmp_path / "error.log").write_text(
        "2026/11/23 10:00:00 [notice] 1#1: start worker processes\n"
        + "2026/11/23 10:00:01 [warn] 7#7: 8192 worker_connections are not enough, reusing connections\n" * 3
        + "2026/11/23 10:00:01 [crit] 7#7: accept4() failed (24: Too many open files)\n"
    )
    server.read_logs()
    shortages = server.own_evidence()["shortages"]
    assert [(s["mark"], s["lines"]) for s in shortages] == [
        ("worker_connections are not enough", 3),
        ("Too many open files", 1),
    ]
    shown = text(evidence_report({"shortages": shortages}))
    assert 'nginx ran out: its error.log says "worker_connections are not enough" 3 times' in shown
    assert 'nginx ran out: its error.log says "Too many open files" once' in shown


@pytest.fixture
def burst_meets_stopped_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every burst queues in full before nginx sees it: its workers are stopped (SIGSTOP) when the load starts
    and continued once the listener's accept queue holds every client (the kernel completes handshakes on
    its own). The worker that then takes the lock accepts until EAGAIN (multi_accept on): all of them at
    once, whatever the timing."""
    original = LoadGenerator.run

    def run(self: LoadGenerator, on_tick: Any = None) -> Any:
        port, clients = self.configs[0].address[1], self.total or 0
        workers = [w for m in psutil.Process().children() if "nginx" in m.name() for w in m.children()]
        for worker in workers:
            worker.suspend()
        resumed: list[bool] = []

        def resume() -> None:
            resumed.append(True)
            for worker in workers:
                worker.resume()

        def tick(done: int, elapsed: float) -> None:
            if not resumed and sum(row.queue for row in listening_sockets(port)) >= clients:
                resume()
            if on_tick:
                on_tick(done, elapsed)

        try:
            return original(self, tick)
        finally:
            if not resumed:
                resume()

    monkeypatch.setattr(LoadGenerator, "run", run)


def nginx_burst(clients: int) -> BurstRun:
    server = ServerSpec(kind="nginx", mode="accept-mutex", workers=2, backlog=1024, accept_batch=0)
    run = run_bursts(server, BurstPlan((clients,), 2, 10.0))
    (cell,) = run.cells
    assert cell.driven == clients
    return run


@needs_nginx
def test_nginx_out_of_worker_connections_says_so_in_the_burst_report(
    monkeypatch: pytest.MonkeyPatch, burst_meets_stopped_workers: None
) -> None:
    """The old fixed table, scaled down: 40 connection slots per worker against 300 queued connections."""
    monkeypatch.setattr(nginx_config, "worker_connections", lambda in_flight, workers: 40)
    run = nginx_burst(300)
    assert [s["mark"] for s in run.shortages] == ["worker_connections are not enough"]
    assert run.shortages[0]["lines"] >= 1
    shown = text(burst_report(BurstResult((run,))))
    assert 'nginx ran out: its error.log says "worker_connections are not enough"' in shown
    assert BurstResult.from_dict(BurstResult((run,)).to_dict()).runs[0].shortages == run.shortages


@needs_nginx
def test_nginx_out_of_descriptors_says_so(monkeypatch: pytest.MonkeyPatch, burst_meets_stopped_workers: None) -> None:
    """A worker's open-file limit below what the load holds (nginx lowers its own; only raising needs the
    right to): accepting 300 queued connections meets EMFILE, and the report says so."""
    monkeypatch.setattr(nginx_config, "worker_rlimit", lambda connections: "worker_rlimit_nofile 100;\n")
    run = nginx_burst(300)
    assert [s["mark"] for s in run.shortages] == ["Too many open files"]
    assert 'nginx ran out: its error.log says "Too many open files"' in text(burst_report(BurstResult((run,))))
