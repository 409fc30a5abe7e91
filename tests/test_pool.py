"""The pool shape (--pool): -c connections opened one after another at idle, then the requests over them.

Witnesses: the workers' own counts (connections accepted, the most held at once, requests answered) against
the client's; a pool of connections kept for the whole run is exactly C connections, held to the end.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.experiments.session import run_latency
from accept_order.loads.generator import LoadGenerator


@pytest.mark.parametrize("mode", ["epoll", "reuseport", "fd-pass"])
def test_a_pool_kept_for_the_whole_run_holds_exactly_its_connections(mode: str) -> None:
    load = ConcurrentLoad(connections=1200, concurrency=8, driver_procs=2, requests_per_connection=0, pool=True)
    result = run_latency(ServerSpec(mode=mode, workers=4), load)
    assert not result.errors and sum(result.served) == 1200
    assert result.pool == (8, 8)
    assert sum(result.connections) == 8 and result.held_at_end == result.connections
    # each worker held, at its peak, exactly the connections it accepted (none closed before the end)
    assert [c.held_peak for c in result.counters] == list(result.connections)
    assert [c.accepts for c in result.counters] == list(result.connections)
    assert [c.requests for c in result.counters] == list(result.served)


def test_a_pool_fills_in_one_order_on_an_idle_server() -> None:
    """accept-mutex at idle: the lock's holder takes every connection of the pool, one after another."""
    load = ConcurrentLoad(connections=400, concurrency=6, driver_procs=2, requests_per_connection=0, pool=True)
    result = run_latency(ServerSpec(mode="accept-mutex", workers=3), load)
    assert sorted(result.connections, reverse=True) == [6, 0, 0]


def test_a_blocking_pool_beyond_its_workers_is_refused_before_it_runs() -> None:
    """blocking serves each connection to its end: with 4 connections kept for the whole run over 3 workers,
    the 4th would never be answered. The run once waited out its pool-fill timeout and said so (20 s at the
    default --timeout: 'latency -m blocking --pool -c 8 -w 2'); the plan knows it, so it is refused in one
    line before anything starts (tests/test_held_whole_run.py has every such mode and command). The report's
    note for a server whose own rules may end a held connection is tests/test_kept_connections_lab_load.py's."""
    args = ["latency", "-m", "blocking", "-w", "3", "--pool", "-c", "4", "--requests-per-connection", "0", "-n", "300"]
    assert_one_error_line(run_cli(args), 2, "each of mode blocking's 3 workers", "1 of the 4 connections would never")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=lambda s: signal.Signals(s).name)
def test_a_signal_mid_run_keeps_the_pool_measured_so_far(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signum: int
) -> None:
    """A pool of connections kept for a 60 s run, stopped by a signal once requests were served: the file
    keeps what was measured, marked interrupted, with the connections held when it stopped."""
    tally = LoadGenerator.tally  # what each tick reads (34eb880: finished() is no longer on the tick's path)
    sent = []

    def signalling(self: Any) -> Any:
        done = tally(self)
        if done.served >= 50 and not sent:  # from the parent's tick, once the requests run over the pool
            sent.append(signum)
            signal.raise_signal(signum)
        return done

    monkeypatch.setattr(LoadGenerator, "tally", signalling)
    out = tmp_path / "s.json"
    result = run_cli(
        [
            "latency",
            "-m",
            "epoll",
            "-w",
            "2",
            "--pool",
            "-c",
            "4",
            "--requests-per-connection",
            "0",
            "--duration",
            "60s",
            "--json",
            str(out),
        ]  # fmt: skip
    )
    assert sent and result.exit_code == {signal.SIGINT: 130, signal.SIGTERM: 143}[signum], result.output
    assert "Traceback" not in result.output
    doc = json.loads(out.read_text())
    assert doc["interrupted"] is True and sum(doc["served"]) >= 50
    assert (doc["pool"]["opened"], doc["pool"]["planned"]) == (4, 4) and sum(doc["held_at_end"]) == 4
