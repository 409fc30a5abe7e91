"""A load's concurrency is the most that ran at once: no more than its connections (its requests, with K != 1),
whatever -c was given beside them. '-n 20' beside the default -c 200 opened 20 at most, and the header, the file
and the model said 200 (the pinned model spread 200 clients over the workers' hold)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from conftest import run_cli

from accept_order.core.spec import ConcurrentLoad
from accept_order.core.target import ReplyAttribution
from accept_order.loads.generator import LoadGenerator
from accept_order.loads.hosts.split import shares

LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs epoll and procfs")


@LINUX_ONLY
def test_header_file_and_model_say_the_concurrency_that_ran(tmp_path: Path) -> None:
    path = tmp_path / "lat.json"
    result = run_cli(["latency", "-w", "2", "-n", "20", "--requests-per-connection", "5", "--json", str(path)])
    assert result.exit_code == 0, result.output
    header = result.stdout.splitlines()[0]
    assert "20 requests, 20 concurrent" in header, header  # not the default -c's 200
    doc = json.loads(path.read_text())
    assert doc["load"]["concurrency"] == 20
    # the model's clients are those that ran: each request queued at the worker holding its connection
    assert doc["model"]["concurrency"] == 20, doc["model"]

    # An older file kept -c as given: read again, it says what ran.
    doc["load"]["concurrency"] = 200
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    shown = run_cli(["show", str(old)])
    assert shown.exit_code == 0, shown.output
    assert re.search(r"\b20 requests, 20 concurrent\b", shown.stdout), shown.stdout


@LINUX_ONLY
def test_a_smaller_concurrency_is_kept(tmp_path: Path) -> None:
    result = run_cli(["latency", "-w", "2", "-n", "20", "-c", "7", "--driver-procs", "3"])
    assert result.exit_code == 0, result.output
    assert "20 connections, 7 concurrent, 3 driver processes" in result.stdout.splitlines()[0]


@pytest.mark.parametrize(
    "extra",
    [{}, {"requests_per_connection": 5}, {"requests_per_connection": 0, "pool": True}, {"rate": 1000.0}],
)
def test_spec_drivers_and_hosts_share_what_ran(extra: dict[str, object]) -> None:
    load = ConcurrentLoad(connections=20, concurrency=200, driver_procs=3, **extra).validated()  # type: ignore[arg-type]
    assert load.concurrency == 20
    assert ConcurrentLoad.from_dict({**load.to_dict(), "concurrency": 200}) == load  # as an older file said it
    gen = LoadGenerator(("127.0.0.1", 9), ReplyAttribution(()), load)
    assert [c.slots for c in gen.configs] == [7, 7, 6]  # each driver's slots no more than its share
    assert [c.requests for c in gen.configs] == [7, 7, 6]
    if "pool" not in extra:  # a pool is driven from one host
        parts = shares(ConcurrentLoad(connections=5, concurrency=200, **extra), 3)  # type: ignore[arg-type]
        assert [(p.connections, p.concurrency) for p in parts] == [(2, 2), (2, 2), (1, 1)]


def test_a_duration_run_keeps_its_concurrency() -> None:
    load = ConcurrentLoad(connections=None, duration_s=1.0, concurrency=200).validated()
    assert load.concurrency == 200
    assert ConcurrentLoad.from_dict(load.to_dict()).concurrency == 200
