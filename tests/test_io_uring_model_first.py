"""io-uring's latency model queues every connection at worker 0, as its ring takes them while busy.

`latency -m io-uring -w 3 -c 16 --work 1ms` served all 3,000 connections from worker 0 (the replies named it;
883 req/s, one worker's worth), but the model simulated FIRST_REGISTERED as `favoured`, the lowest *idle*
worker first, three workers sharing the queue: it predicted p50 6.8 ms against 18.0 measured and blamed the
load generator and the other processes for the 7.5x. The mode now says its discipline, `first`.

Until worker 0's ring is full: with 140 connections in flight (--work 500us, 2 workers) worker 0 served 1,513
of 3,000, at most 129 per wakeup (its 128 completions and the one that ended its accept), at 127 in flight all
3,000. `first` holds the ring's size (core/uring.ACCEPT_COMPLETIONS), so its model shares past it as the
kernel does.
"""

from __future__ import annotations

from io import StringIO

import pytest
from rich.console import Console

import accept_order
from accept_order.analysis.model_check import discipline_of
from accept_order.analysis.queueing import Arrivals, Service, simulate
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.core.uring import ACCEPT_COMPLETIONS, ACCEPT_ENTRIES
from accept_order.experiments.latency import model_check
from accept_order.experiments.latency.model_report import model_report
from accept_order.servers.modes import MODES
from accept_order.servers.registry import known_mode


def test_io_urings_discipline_is_the_first_worker_alone() -> None:
    spec = ServerSpec(mode="io-uring", workers=3)
    assert discipline_of(known_mode("builtin", "io-uring"), spec) == ("first", 1)


def test_first_queues_every_arrival_at_worker_0_idle_or_busy() -> None:
    """16 clients in a closed loop, a service of exactly 1: one worker serves them all, each waiting for the
    15 ahead of it (sojourn 16); two workers taking the lowest idle one first would halve that."""
    sim = simulate(3, "first", Arrivals.closed(16), Service.deterministic(1.0), 2000)
    assert sim.served[1:] == (0, 0) and sim.served[0] == 2000
    assert sim.percentile(50) == pytest.approx(16.0)
    favoured = simulate(3, "favoured", Arrivals.closed(16), Service.deterministic(1.0), 2000)
    assert favoured.percentile(50) < 7
    # a ring of 128 holds these 16 whatever
    assert simulate(3, "first", Arrivals.closed(16), Service.deterministic(1.0), 2000, ring=128) == sim


def test_a_full_ring_hands_the_next_connections_to_the_next_worker() -> None:
    """127 clients fit in worker 0's ring of 128 beside the one it serves; 200 do not: its accept ends with the
    129th, worker 1 is first until its own ring fills, and the two share the load."""
    fits = simulate(2, "first", Arrivals.closed(127), Service.deterministic(1.0), 20_000, ring=128)
    assert fits.served == (20_000, 0)
    spills = simulate(2, "first", Arrivals.closed(200), Service.deterministic(1.0), 20_000, ring=128)
    assert min(spills.served) > 0.4 * 20_000
    assert spills.percentile(50) == pytest.approx(100, rel=0.05)  # two workers' worth, not 200
    unlimited = simulate(2, "first", Arrivals.closed(200), Service.deterministic(1.0), 20_000)
    assert unlimited.served == (20_000, 0)


def test_a_busy_io_uring_run_is_served_by_worker_0_as_its_model_says() -> None:
    """The kernel's side: with every worker busy for 1 ms per connection and 8 clients, the replies name worker 0
    for every connection (the others' rings are armed but never reached); the model queued them there too."""
    if reason := MODES["io-uring"].unavailable():
        pytest.skip(reason)
    spec = ServerSpec(mode="io-uring", workers=3, work_us=1000)
    result = accept_order.latency(spec, ConcurrentLoad(connections=300, concurrency=8, driver="epoll"))
    assert result.served == (300, 0, 0)
    assert result.model is not None and result.model.discipline == "first"
    # one worker serving 8 clients of at least 1 ms each: the median waits for the 7 ahead of it
    assert result.model.p50_ms >= 7.0


def test_past_its_ring_worker_0_shares_as_the_model_says(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel's side: 140 connections in flight do not fit in worker 0's ring (its completions, the size the
    model holds): worker 1 serves too; the model's own workers share them as well."""
    if reason := MODES["io-uring"].unavailable():
        pytest.skip(reason)
    import uring_api

    assert uring_api.Ring(entries=ACCEPT_ENTRIES).cq_entries == ACCEPT_COMPLETIONS
    spec = ServerSpec(mode="io-uring", workers=2, work_us=200)
    result = accept_order.latency(spec, ConcurrentLoad(connections=1500, concurrency=140, driver="epoll"))
    assert result.served[1] > 0 and sum(result.served) == 1500
    # not asserted: a wakeup's batch under the ring's size. The kernel does not promise it: a fresh-clone CI run saw
    # one wakeup take 140 (the worker reaps completions while the multishot accept still posts them)
    assert result.model is not None and result.model.discipline == "first"
    out = StringIO()
    Console(file=out, width=1000).print(*model_report([result]))
    assert "first = every connection queued at the first armed worker, idle or busy, until its ring's" in out.getvalue()
    # the same run's figures through a ring without end: one worker for 140 clients, twice the wait
    monkeypatch.setattr(model_check, "ACCEPT_COMPLETIONS", 0)
    endless = model_check.predict(result)
    assert endless is not None and result.model.p50_ms < 0.75 * endless.p50_ms
