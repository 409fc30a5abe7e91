"""--requests-per-connection and --pool on every command that drives the load generator (issue 28 §2): sweep,
burst, ramp, and latency --repeat's CSV.

The witness of each is the built-in workers' own count of the requests they answered (servers/keepalive.py),
read from the file, against what the report shows per worker (the replies' count, each request attributed by
its own reply). A command for which an option means nothing refuses it in one line, exit 2.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from conftest import assert_one_error_line, run_cli

from accept_order.analysis.fairness import jain_index


def _ints(text: str) -> list[int]:
    return [int(n) for n in text.split()]


def _own(run: dict[str, Any]) -> list[int]:
    """The requests each worker says it answered (its counters), in worker order."""
    return [c["requests"] for c in sorted(run["counters"], key=lambda c: c["index"])]


def test_sweep_shows_the_requests_each_worker_answered_by_cap(tmp_path: Path) -> None:
    """sweep -n 600 --requests-per-connection 5: per cap, the report's requests per worker are the workers'
    own counts and its Jain's index is theirs; the load generator's CPU is per request, the requests the
    drivers finished."""
    out = tmp_path / "sweep.json"
    args = ["sweep", "-m", "epoll", "-w", "2", "--accept-batch", "1,0", "-n", "600", "-c", "6"]
    result = run_cli([*args, "--requests-per-connection", "5", "--json", str(out)], columns=250)
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert "kept connections by cap" in result.stdout
    row_text = r"^ ?(\d+ limit|no limit) +([\d ]+?)  +([\d ]+?)  +([\d.]+) "  # cap, accepted, requests, Jain
    rows = {m[1]: m for m in re.finditer(row_text, result.stdout, re.M)}
    assert set(rows) == {"1 limit", "no limit"}, result.stdout
    # kept connections run on epoll, and the line says so
    cpu = re.search(r"load generator CPU per request \(µs, on epoll\): 1 limit (\d+), no limit (\d+)", result.stdout)
    assert cpu is not None, result.stdout
    for run, name, shown_cpu in zip(doc["runs"], ("1 limit", "no limit"), cpu.groups(), strict=True):
        assert run["load"]["requests_per_connection"] == 5 and not run.get("errors")
        own = _own(run)
        assert sum(own) == 600 and own == run["served"], run["counters"]
        row = rows[name]
        assert _ints(row[3]) == own  # requests per worker, as the workers counted them
        assert _ints(row[2]) == run["connections"] and sum(run["connections"]) >= 600 // 5
        assert float(row[4]) == round(jain_index(own), 3)
        drivers = run["drivers"]
        assert sum(d["requests"] for d in drivers) == 600  # what the CPU is divided by: requests, not connections
        assert shown_cpu == f"{round(1e6 * sum(d['cpu_s'] for d in drivers) / 600, 1):.0f}"


def test_sweep_over_a_pool_kept_for_the_run(tmp_path: Path) -> None:
    """A pool of 4 kept for the whole run: every cap's workers hold its 4 connections at the end (their
    own peaks add up to it) and answer the 400 requests the report shows."""
    out = tmp_path / "pool.json"
    args = ["sweep", "-m", "epoll", "-w", "2", "--accept-batch", "1,0", "-n", "400", "-c", "4", "--pool"]
    result = run_cli([*args, "--requests-per-connection", "0", "--json", str(out)], columns=250)
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    for run in doc["runs"]:
        assert (run["pool"]["opened"], run["pool"]["planned"]) == (4, 4)
        assert sum(run["connections"]) == 4 and run["held_at_end"] == run["connections"]
        assert [c["held_peak"] for c in sorted(run["counters"], key=lambda c: c["index"])] == run["connections"]
        assert _own(run) == run["served"] and sum(run["served"]) == 400
    assert result.stdout.count("pool: 4 of 4 connections opened") == 2


def test_burst_of_connections_that_carry_k_requests(tmp_path: Path) -> None:
    """burst --clients 30 --requests-per-connection 10: 300 requests over at least the 30 connections, the
    report's requests per worker are the workers' own counts, and it says so."""
    out = tmp_path / "burst.json"
    args = ["burst", "--modes", "epoll,reuseport", "-w", "3", "--clients", "30", "--requests-per-connection", "10"]
    result = run_cli([*args, "--json", str(out)], columns=300)
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    for run in doc["runs"]:
        (cell,) = run["cells"]
        label = run["server"]["mode"]
        assert cell["errors"] == {} and cell["requests_per_connection"] == 10
        assert sum(cell["served"]) == 300 and sum(d["requests"] for d in cell["drivers"]) == 300
        assert 30 <= sum(cell["connections"]) <= 300 and len(cell["connections"]) == 3
        assert run["worker_requests"] == cell["served"]  # the workers' own count, the only burst of the run
        shown = re.search(rf"{label}, 30 × 10 requests: served 300 requests \(([\d ]+); Jain ([\d.]+)\) over "
                          rf"(\d+) connections \(([\d ]+)\)", result.stdout)  # fmt: skip
        assert shown is not None, result.stdout
        assert _ints(shown[1]) == run["worker_requests"] and _ints(shown[4]) == cell["connections"]
        assert float(shown[2]) == round(jain_index(cell["served"]), 3)
        assert f"{label}: requests per worker over the bursts, the workers' own count: " in result.stdout
        assert "CPU-µs per request" in result.stdout and "CPU-µs per connection" not in result.stdout
    assert "as the replies say" in result.stdout


def test_a_burst_of_one_request_each_keeps_its_file() -> None:
    """K = 1: the plan's load is the one-request burst it was, and the cell stores no kept fields."""
    from accept_order.experiments.burst.result import BurstCell
    from accept_order.experiments.burst.run import BurstPlan

    load = BurstPlan((100,)).validated().load(100)
    assert load.connections == 100 and load.concurrency == 100 and not load.keeps_connections
    kept = BurstPlan((100,), requests_per_connection=4).validated().load(100)
    assert kept.connections == 400 and kept.concurrency == 100 and kept.requests_per_connection == 4
    cell = BurstCell(clients=1, wall_s=0.1, served=(1,), errors={}, counters={}, drivers=())
    assert not {"requests_per_connection", "connections"} & set(cell.to_dict())
    assert BurstCell.from_dict(cell.to_dict()) == cell


def test_burst_refuses_what_means_nothing_for_a_burst() -> None:
    """A connection kept for the whole run has no end of its own, and a pool opens one connection at a time:
    one line each, exit 2, before anything starts."""
    line = assert_one_error_line(run_cli(["burst", "--requests-per-connection", "0"]), 2, "no end of its own")
    assert "--requests-per-connection 0" in line
    assert_one_error_line(run_cli(["burst", "--pool"]), 2, "burst takes no --pool", "all at once")
    assert_one_error_line(
        run_cli(["burst", "--server", "gunicorn", "--requests-per-connection", "3"]),
        2,
        "gunicorn cannot keep a connection",
    )


def test_ramp_over_a_pool(tmp_path: Path) -> None:
    """ramp --concurrency-steps 3,6 --pool --requests-per-connection 0: each step fills its own pool at
    idle (all of it: an event-driven mode answers every connection it holds), and the requests per worker
    over the steps are the workers' own counts."""
    out = tmp_path / "ramp.json"
    args = ["ramp", "-m", "epoll", "-w", "2", "--concurrency-steps", "3,6", "--step", "300ms", "--keep-going"]
    result = run_cli([*args, "--pool", "--requests-per-connection", "0", "--json", str(out)], columns=250)
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["plan"]["pool"] is True and doc["plan"]["requests_per_connection"] == 0
    steps = doc["steps"]
    assert [(s["pool"]["opened"], s["pool"]["planned"]) for s in steps] == [(3, 3), (6, 6)]
    assert [sum(s["connections"]) for s in steps] == [3, 6]
    totals = [sum(s["served"][i] for s in steps) for i in range(2)]
    assert doc["worker_requests"] == totals and sum(totals) > 0
    shown = re.findall(r"requests per worker: ([\d ]+) \(Jain ([\d.]+)\) over connections accepted ([\d ]+);",
                       result.stdout)  # fmt: skip
    assert [(_ints(r), _ints(c)) for r, _, c in shown] == [(s["served"], s["connections"]) for s in steps]
    assert f"the workers' own count: {' '.join(map(str, totals))}, as the replies say" in result.stdout
    assert "CPU-µs per request" in result.stdout


def test_ramp_of_rates_over_k_requests_each(tmp_path: Path) -> None:
    """An open loop of 500 requests per second, 5 per connection: the step counts requests."""
    out = tmp_path / "ramp.json"
    args = ["ramp", "-m", "epoll", "-w", "2", "--rates", "500", "--step", "400ms", "--in-flight", "8"]
    result = run_cli([*args, "--requests-per-connection", "5", "--json", str(out)], columns=250)
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    (step,) = doc["steps"]
    assert "pool" not in step and "pool" not in doc["plan"]
    assert doc["worker_requests"] == step["served"] and sum(step["served"]) >= 100
    assert sum(step["served"]) / 5 <= sum(step["connections"]) <= sum(step["served"]) / 5 + 8
    assert "rates in requests per second" in result.stdout


def test_ramp_of_one_request_each_keeps_its_file(tmp_path: Path) -> None:
    out = tmp_path / "ramp.json"
    # an open-loop step: a closed one took every CPU for its 200 ms, and the file's fields are the same either way
    args = ["ramp", "-m", "epoll", "-w", "2", "--rates", "50", "--step", "200ms", "--json", str(out)]
    result = run_cli(args)
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert not {"requests_per_connection", "pool"} & set(doc["plan"]) and "worker_requests" not in doc
    assert not {"connections", "pool"} & set(doc["steps"][0])
    assert "CPU-µs per connection" in result.stdout


def test_ramp_refuses_a_server_that_closes_its_connections() -> None:
    refused = run_cli(["ramp", "--server", "gunicorn", "--pool", "--requests-per-connection", "0"])
    assert_one_error_line(refused, 2, "--pool: gunicorn cannot keep")


def test_latency_repeat_csv_has_the_kept_columns(tmp_path: Path) -> None:
    """latency --repeat over kept connections: the rounds table adds the kept columns, the workers table the
    connections and the worker's own count beside the replies' (`served`); one-request runs keep the tables
    they had."""
    out = tmp_path / "repeat.json"
    args = ["latency", "-m", "epoll", "-w", "2", "-n", "300", "-c", "4", "--repeat", "2"]
    result = run_cli([*args, "--requests-per-connection", "5", "--json", str(out)])
    assert result.exit_code == 0, result.output
    rounds = run_cli(["show", str(out), "--format", "csv", "--table", "rounds"]).stdout.splitlines()
    header = rounds[0].split(",")
    assert header[-5:] == ["requests_per_connection", "connections", "jain_requests", "pool_opened", "pool_planned"]
    table = run_cli(["show", str(out), "--format", "csv", "--table", "workers"]).stdout.splitlines()
    workers = [dict(zip(table[0].split(","), row.split(","), strict=True)) for row in table[1:]]
    assert len(workers) == 4
    for w in workers:
        assert w["worker_requests"] == w["served"] and w["accepted"] != ""
    doc = json.loads(out.read_text())
    for row, (run,) in zip(rounds[1:], doc["rounds"], strict=True):
        cells = dict(zip(header, row.split(","), strict=True))
        assert cells["requests_per_connection"] == "5" and int(cells["connections"]) == sum(run["connections"])
        assert float(cells["jain_requests"]) == round(jain_index(run["served"]), 4)
        assert cells["pool_opened"] == cells["pool_planned"] == ""
    plain = tmp_path / "plain.json"
    assert run_cli([*args, "--json", str(plain)]).exit_code == 0
    shown = run_cli(["show", str(plain), "--format", "csv", "--table", "rounds"]).stdout.splitlines()[0]
    assert shown == "round,run,count,failed,p50_us,p99_us,p999_us,max_us,wall_s"
    shown = run_cli(["show", str(plain), "--format", "csv", "--table", "workers"]).stdout.splitlines()[0]
    assert shown.endswith(",cpu_s,served")


def test_sweep_repeat_csv_names_each_cap(tmp_path: Path) -> None:
    """sweep --repeat's CSV rows are named by their cap, as its report names them (the caps share one mode),
    and carry the kept columns of a pool kept for the run."""
    out = tmp_path / "sweep.json"
    args = ["sweep", "-m", "epoll", "-w", "2", "--accept-batch", "1,0", "-n", "200", "-c", "2", "--repeat", "2"]
    result = run_cli([*args, "--pool", "--requests-per-connection", "0", "--json", str(out)])
    assert result.exit_code == 0, result.output
    rounds = run_cli(["show", str(out), "--format", "csv", "--table", "rounds"]).stdout.splitlines()
    assert [row.split(",")[:2] for row in rounds[1:]] == [["1", "1 limit"], ["1", "no limit"], ["2", "1 limit"],
                                                         ["2", "no limit"]]  # fmt: skip
    assert all(row.split(",")[-2:] == ["2", "2"] for row in rounds[1:])  # the pool: 2 of 2 opened
    workers = run_cli(["show", str(out), "--format", "csv", "--table", "workers"]).stdout.splitlines()
    assert {row.split(",")[1] for row in workers[1:]} == {"1 limit", "no limit"}
