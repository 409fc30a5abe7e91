"""A merge of pool runs says its split and its first requests are several runs', not one.

'merge a.json b.json' of two 'latency -w 2 --modes epoll,reuseport --pool -c 8 --requests-per-connection 0' runs
(load 4, Linux 6.18.44, 2 vCPUs; epoll 4/4 then 6/2, reuseport 3/5 twice) read 'epoll 10/6 ...: How sure: ... a split
is one draw of its 16 connections, so one run cannot say a mode splits them so every time' and, under each mode,
'counted over this run's 4,324 requests, not estimated; one run: --repeat says ...': two runs' draws added, and two
runs' requests. One run's verdict (kept_tail.py) already said '2 runs merged' of a merged pool; the --modes verdict
and the fill's line now say so too, and one run's file reads as before."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from conftest import run_cli
from test_kept_first_requests import _kept, _with_fill

from accept_order.core.histogram import LatencyHistogram
from accept_order.experiments.latency.first_requests import fill_verdict
from accept_order.experiments.latency.result import LatencyResult

POOL = ["latency", "-w", "2", "--modes", "epoll,reuseport", "--pool", "-c", "4", "--requests-per-connection", "0"]


def _pool_run(directory: Path, name: str) -> Path:
    out = directory / name
    result = run_cli([*POOL, "-n", "400", "--json", str(out)])
    assert result.exit_code == 0, result.output
    return out


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_a_merge_of_two_pools_says_two_runs(tmp_path: Path) -> None:
    a, b = _pool_run(tmp_path, "a.json"), _pool_run(tmp_path, "b.json")
    one = _flat(run_cli(["show", str(a)]).stdout)
    # one run's file: one draw
    assert "a split is one draw of its 4 connections, so one run cannot say a mode splits them" in one, one
    merged = tmp_path / "ab.json"
    result = run_cli(["merge", str(a), str(b), "--json", str(merged)])
    assert result.exit_code == 0, result.output
    said = _flat(result.stdout)
    # whichever line each mode's first requests get (the fill's or the steady state's), none is one run's
    assert "one run cannot say" not in said and "this run's" not in said and "one run:" not in said, said
    assert "Connections per worker, each kept for the whole of their runs and so its worker's load to the end" in said
    assert (
        "each split adds 2 runs' draws of their connections (8 connections in all), each worker's row adding that "
        "index's from every run, so 2 runs merged cannot say a mode splits them so every time" in said
    ), said


def test_the_steady_states_line_counts_the_merged_runs_requests() -> None:
    """fill_verdict's line where the tail is the later requests (not timing-bound: made-up histograms), of one run
    and of two merged (results/merge.py's merged_from)."""
    one = _later_tail()
    assert "How sure: counted over this run's 10,000 requests, not estimated; one run: --repeat" in (
        fill_verdict(one) or ""
    )
    files = {"files": [{"file": "a.json"}, {"file": "b.json"}], "concurrent": False}
    merged = dataclasses.replace(one, evidence={**one.evidence, "merged_from": files})
    said = fill_verdict(merged) or ""
    assert said.startswith("The tail is the steady state, not the fill"), said
    assert (
        "How sure: counted over the 10,000 requests of the 2 runs merged, not estimated; 2 runs merged into one "
        "histogram: --repeat says whether another run's first requests reach its tail." in said
    ), said
    # files measured at once (several client hosts, one server) are one run's
    at_once = dataclasses.replace(one, evidence={**one.evidence, "merged_from": {**files, "concurrent": True}})
    assert "counted over this run's 10,000 requests" in (fill_verdict(at_once) or "")


def _later_tail() -> LatencyResult:
    """test_kept_first_requests' run whose tail is 200 later requests at 9 ms, its first requests at 0.5 ms."""
    slow_later = _with_fill(_kept(0, pool=False), 500, 25)
    h = LatencyHistogram()
    h.merge(slow_later.histogram)
    steady = LatencyHistogram()
    for us, n in h.to_dict()["counts"]:
        steady.add(us, n - 200 if us == 1000 else n)
    steady.add(9000, 200)
    return dataclasses.replace(slow_later, histogram=steady)
