"""--pool with no more requests (-n) than pooled connections (-c) is refused: the pool fills one connection after
another with one request each, so every request went to the fill and none ran over the pool, and the report was
the fill's: 'latency -n 20 --pool --requests-per-connection 0' read '20 requests, 20 concurrent', 8,160 req/s over
a load of 0.00 s, a model of 20 clients (closed loop), where one connection at a time had been opened."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import assert_one_error_line, run_cli

POOL = ["--pool", "--requests-per-connection", "0"]


@pytest.mark.parametrize("command", ["latency", "sweep"])
@pytest.mark.parametrize("load", [["-n", "20"], ["-n", "8", "-c", "8"]])
def test_a_pool_that_would_take_every_request_is_refused(command: str, load: list[str]) -> None:
    line = assert_one_error_line(run_cli([command, "-w", "2", *load, *POOL]), 2, "--pool fills", "give -n above -c")
    assert f"-n {load[1]} would all go to the fill" in line


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs epoll and procfs")
def test_a_pool_with_requests_left_runs_them_over_it(tmp_path: Path) -> None:
    path = tmp_path / "pool.json"
    result = run_cli(["latency", "-w", "2", "-n", "30", "-c", "8", *POOL, "--json", str(path)])
    assert result.exit_code == 0, result.output
    doc = json.loads(path.read_text())
    assert doc["pool"]["opened"] == 8 and doc["load"]["concurrency"] == 8
    assert sum(doc["served"]) == 30  # the fill's 8 and 22 over the pool
