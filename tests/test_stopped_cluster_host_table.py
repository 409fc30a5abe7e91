"""latency --clients c1,c2,c3 stopped by Ctrl-C: the per-host table said 'failed 45 (45 aborted)' for each host
under a summary of 'errors 0' and the line '178 connections under way at the stop (aborted by it: neither failed
nor served)'. A load cut short says its hosts' aborted connections apart: 'failed 0; 45 under way'."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

from rich.console import Console

from accept_order.core.histogram import LatencyHistogram
from accept_order.core.hosts import HostOutcome
from accept_order.render.hosts import HostsPart, host_parts

FILE = Path(__file__).parent / "data" / "first_hour_4_hosts_stopped.json"


def _row(stopped: bool, errors: dict[str, int]) -> str:
    histogram = LatencyHistogram()
    histogram.add(1000, 100)
    host = HostOutcome("c1", histogram, errors, (100,), 1.0, offset_s=0.0, uncertainty_s=0.0001, started_s=0.0)
    console = Console(width=200, record=True, file=io.StringIO())
    for renderable in host_parts([HostsPart(None, [host], 1.0, None, stopped)]):
        console.print(renderable)
    return next(line for line in console.export_text().splitlines() if line.lstrip().startswith("c1"))


def test_a_stopped_load_s_aborted_connections_are_not_its_hosts_failures() -> None:
    assert " 0; 45 under way " in _row(True, {"aborted": 45})
    assert " 2 (2 ECONNRESET); 45 under way " in _row(True, {"aborted": 45, "ECONNRESET": 2})


def test_a_load_that_ran_to_its_end_keeps_aborted_among_its_failures() -> None:
    assert " 45 (45 aborted) " in _row(False, {"aborted": 45})


def test_a_stopped_cluster_run_s_table_agrees_with_its_summary(tmp_path: Path) -> None:
    from conftest import run_cli

    path = tmp_path / "stopped.json"
    shutil.copy(FILE, path)
    assert json.loads(path.read_text())["interrupted"]
    shown = run_cli(["show", str(path)]).stdout
    assert "178 connections under way at the stop" in shown
    assert "aborted)" not in shown and "0; 45 under way" in shown, shown
