"""One latency run off a terminal says how far it has got: `latency` (default 100,000 connections, a minute on this
busy machine) piped into a log said nothing until its report, where a comparison, a sweep or a --repeat beat every
10 s ('run 2 of 4, 40 s elapsed'). Its heartbeat now reads 'accept-order: 31,000 of 100,000 connections, 42 s
elapsed' ('102,626 connections, 10 s elapsed' for a --duration run)."""

from __future__ import annotations

import re
import sys
from typing import Any

import pytest
from conftest import run_cli

from accept_order.cli import latency
from accept_order.cli.progress import RunProgress


class FakeClock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def test_one_run_says_its_connections_and_time() -> None:
    clock, lines = FakeClock(), []
    runs = RunProgress(1, clock=clock, write=lines.append, every=10)
    runs.next()
    clock.now += 10
    assert runs.beat() and lines == ["accept-order: 10 s elapsed"]  # no tick yet: what is known
    runs.reached = "31,000 of 100,000 connections"
    clock.now += 32
    assert runs.beat() and lines[-1] == "accept-order: 31,000 of 100,000 connections, 42 s elapsed"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs epoll and procfs")
def test_a_single_run_off_a_terminal_beats(monkeypatch: pytest.MonkeyPatch) -> None:
    beats: list[str] = []

    class Quick(RunProgress):  # a beat every 0.2 s, collected (run_cli's stderr is no terminal)
        def __init__(self, total: int, **kwargs: Any) -> None:
            super().__init__(total, write=beats.append, every=0.2, **kwargs)

    monkeypatch.setattr(latency, "RunProgress", Quick)
    result = run_cli(["latency", "-w", "1", "-c", "2", "--duration", "2.5s"])
    assert result.exit_code == 0, result.output
    assert beats, "no heartbeat in 2.5 s"
    said = r"accept-order: ([\d,]+ connections: [\d,]+ served, [\d,]+ failed( \(.*\))?, )?[\d.]+ s elapsed"
    assert all(re.fullmatch(said, b) for b in beats), beats
    assert any("connections" in b for b in beats), beats  # the load's ticks reached it


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs epoll and procfs")
def test_kept_connections_beat_their_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    # a pool of 2 connections ticks its requests: 'latency --pool -c 4 --requests-per-connection 0' beat '326,919
    # connections' where it held 4 and its report counted 358,562 requests
    beats: list[str] = []

    class Quick(RunProgress):
        def __init__(self, total: int, **kwargs: Any) -> None:
            super().__init__(total, write=beats.append, every=0.2, **kwargs)

    monkeypatch.setattr(latency, "RunProgress", Quick)
    args = ["latency", "-w", "1", "--pool", "-c", "2", "--requests-per-connection", "0", "--duration", "2.5s"]
    result = run_cli(args)
    assert result.exit_code == 0, result.output
    said = r"accept-order: [\d,]+ requests: [\d,]+ served, [\d,]+ failed( \(.*\))?, [\d.]+ s elapsed"
    assert any(re.fullmatch(said, b) for b in beats), beats
    assert not any("connections" in b for b in beats), beats
