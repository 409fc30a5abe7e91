"""The latency model simulates a closed loop too short for a steady state as it ran: its own connections from empty
queues, all measured, every client's first one spread over the time the load generator took to start them.

`latency -m blocking -w 2 -c 600 -n 600 --work 1ms` is one burst (each client one connection), but the model
simulated 600 clients in a steady loop over 6,000 connections and dropped the start: it predicted p50 317 ms against
174 measured, and for epoll 298 against 171, then said the run was 'below what queueing predicts by more than a factor
of 1.25 ... the model's inputs (service time, discipline) do not fit' (2 vCPUs, load 4-5). The files are those runs'.
Simulated as run, all 600 at once, epoll's batch-all discipline hands nearly all of them to the first worker free
(p50 308 ms); the drivers started them over 14 ms, and spread so the model reads 203 ms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from accept_order.analysis.model_check import TOLERANCE, agrees
from accept_order.analysis.queueing import Arrivals, Service, simulate
from accept_order.experiments.latency import model_check
from accept_order.experiments.latency.result import LatencyResult

DATA = Path(__file__).parent / "data"


def _run(name: str) -> LatencyResult:
    return LatencyResult.from_dict(json.loads((DATA / name).read_text()))


@pytest.mark.parametrize(
    "name", ["latency_burst_blocking.json", "latency_burst_epoll.json", "latency_burst_io_uring.json"]
)
def test_a_burst_of_a_closed_loop_is_predicted_as_it_ran(name: str) -> None:
    run = _run(name)
    measured = run.histogram.percentile(50) / 1000
    model = model_check.predict(run)
    runs = -(-5000 // run.driven)  # its own connections, run again for the model's own noise (5,000 at least)
    assert model is not None and model.simulated == run.driven * runs
    assert agrees(measured, model.p50_ms), (measured, model.p50_ms, TOLERANCE)


def test_without_the_drivers_start_epolls_first_free_worker_takes_the_burst(monkeypatch: pytest.MonkeyPatch) -> None:
    run = _run("latency_burst_epoll.json")
    monkeypatch.setattr(model_check, "_start_us", lambda result: 0.0)
    model = model_check.predict(run)
    assert model is not None and model.p50_ms > TOLERANCE * run.histogram.percentile(50) / 1000


def test_a_long_closed_loop_is_still_its_steady_state() -> None:
    """Ten rounds or more: the steady state, its start left out as warm-up (the figures as before)."""
    doc = json.loads((DATA / "latency_burst_blocking.json").read_text())
    doc["load"]["concurrency"] = 60
    long = LatencyResult.from_dict(doc)
    model = model_check.predict(long)
    assert model is not None and model.simulated == 6000


def test_a_closed_loops_start_spread_over_time() -> None:
    """600 clients' first requests at once against a worker that takes all it finds (batch 0): the first one free
    takes the rest. Started over 14 units (a service of 1), the other worker takes its share."""
    at_once = simulate(2, "favoured", Arrivals.closed(600), Service.deterministic(1.0), 600, batch=0, warmup=0)
    assert at_once.served == (599, 1)
    spread = simulate(2, "favoured", Arrivals.closed(600, 14.0), Service.deterministic(1.0), 600, batch=0, warmup=0)
    assert spread.served[1] > 60 and spread.percentile(50) < 0.75 * at_once.percentile(50)
    # no start: the same figures as a closed loop always gave
    again = simulate(2, "favoured", Arrivals.closed(600, 0.0), Service.deterministic(1.0), 600, batch=0, warmup=0)
    assert again == at_once


def test_an_io_uring_burst_reaches_the_ring_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """'-m io-uring -w 2 -c 300 -n 300 --work 1ms' served 300/0 (the file's, max 129 a wakeup: the ring filled) though
    its drivers took 8-49 ms to start the connections: io_uring's accept takes what the listener holds in one go, so
    the model starts them at once. Spread, it hands 128 on and reads the p50 at half the measured one."""
    run = _run("latency_burst_io_uring.json")
    assert run.served == (300, 0) and max(c.max_batch or 0 for c in run.counters) == 129  # the witness
    monkeypatch.setattr(model_check, "_start_us", lambda result: 30_000.0)
    model = model_check.predict(run)
    assert model is not None and agrees(run.histogram.percentile(50) / 1000, model.p50_ms)
