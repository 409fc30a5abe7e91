"""The `latency` and `sweep` commands: output format, JSON + show, bad input as one line, SIGTERM."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from click.testing import Result
from conftest import assert_one_error_line, child_processes, gone, run_cli, wait_for

from accept_order.analysis.one_run import NOT_APART
from accept_order.analysis.tails import TIGHTEST, tail_verdict
from accept_order.core.cpus import allowed_cpus
from accept_order.experiments.latency.experiment import compare_verdict
from accept_order.experiments.latency.result import LatencyCompareResult, LatencyResult

LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs epoll and procfs")
CLI = [str(Path(sys.executable).with_name("accept-order"))]
SMALL = ["-w", "2", "-n", "200", "-c", "8", "--work-us", "100"]
SUMMARY = re.compile(
    r"^Duration in ms \((?P<mode>[\w-]+)\) min:\d+\.\d\d avg:\d+\.\d\d med=\d+\.\d\d max:\d+\.\d\d "
    r"dev:\d+\.\d\d count:(?P<n>\d+)$",
    re.M,
)


def cli(*args: str) -> Result:
    # COLUMNS=120, what a pipe gets: the mmhistogram lines whole, as the seed prints them (a terminal
    # narrower than a line folds it: tests/test_width.py).
    return run_cli(list(args), columns=120)


@LINUX_ONLY
def test_latency_prints_mmhistogram_lines_and_writes_json(tmp_path: Path) -> None:
    path = tmp_path / "lat.json"
    result = cli("latency", "--mode", "blocking", *SMALL, "--json", str(path))
    assert result.exit_code == 0, result.output
    out = result.stdout
    match = SUMMARY.search(out)
    assert match and match["mode"] == "blocking" and match["n"] == "200"
    assert "Duration in ms (blocking):\n value |" + "-" * 50 + " count\n" in out
    assert "p99.9 ms" in out and "req/s" in out
    assert re.search(r"\b200\s+connections, 8 concurrent", out), out  # 0.2: "N connections", not "N requests"
    assert "requests" not in out
    assert len(re.findall(r"^pid \d+'s current affinity list: \S+$", out, re.M)) == 2
    # Not a terminal: no progress bar, only the note about the file.
    assert result.stderr.strip() == f"wrote {path}"
    doc = json.loads(path.read_text())
    assert doc["kind"] == "latency" and doc["schema"] == "accept-order" and doc["version"] == 2
    assert doc["summary"]["count"] == 200 and doc["server"]["mode"] == "blocking"
    assert doc["server"]["workers"] == 2 and doc["server"]["work_us"] == 100
    assert doc["load"] == {
        "kind": "closed-loop",
        "connections": 200,
        "duration_s": None,
        "concurrency": 8,
        "driver_procs": 2,
        "timeout_s": 10.0,
    }
    shown = cli("show", str(path))
    assert shown.exit_code == 0, shown.output
    assert shown.stdout == out  # `show` prints the run exactly as `latency` did


@LINUX_ONLY
def test_pin_puts_each_worker_on_its_own_cpu() -> None:
    cpus = allowed_cpus()
    result = cli("latency", *SMALL[2:], "-w", str(len(cpus)), "--pin")
    assert result.exit_code == 0, result.output
    listed = re.findall(r"^pid \d+'s current affinity list: (\S+)$", result.stdout, re.M)
    assert listed == [str(c) for c in cpus]


@LINUX_ONLY
def test_duration_instead_of_a_count() -> None:
    result = cli("latency", "-w", "2", "-c", "4", "--duration", "300ms")
    assert result.exit_code == 0, result.output
    assert "300 ms, 4 concurrent" in result.stdout


@LINUX_ONLY
def test_compare_prints_both_histograms_a_table_and_a_verdict(tmp_path: Path) -> None:
    # 0.2: --modes (0.1's --compare is a hidden alias, checked in test_cli.py's bad-input list).
    path = tmp_path / "cmp.json"
    result = cli("latency", "--modes", "blocking,reuseport", *SMALL, "--json", str(path))
    assert result.exit_code == 0, result.output
    assert [m["mode"] for m in SUMMARY.finditer(result.stdout)] == ["blocking", "reuseport"]
    table = result.stdout[result.stdout.index("latency by mode (ms)") :]
    assert re.search(r"^blocking +\d", table, re.M) and re.search(r"^reuseport +\d", table, re.M)
    doc = json.loads(path.read_text())
    assert doc["kind"] == "latency-compare" and len(doc["runs"]) == 2 and "text" in doc["verdict"]
    assert [run["server"]["mode"] for run in doc["runs"]] == ["blocking", "reuseport"]
    # The verdict printed and saved is the one the saved runs give (which tail is tighter is the machine's),
    # with how sure one run each can be (compare_verdict: the tail verdict, then 'How sure:').
    verdict = compare_verdict(LatencyCompareResult.from_dict(doc))
    assert doc["verdict"]["text"] == verdict.text
    tail = tail_verdict([LatencyResult.from_dict(run) for run in doc["runs"]]).text
    # a lead the runs' own samples cannot tell apart says so in its first clause (200 latencies bound no p99 above:
    # most runs here), and a generator that paced every run puts its sentence first (experiment.compare_verdict)
    plain = verdict.text.replace(f"{TIGHTEST}, {NOT_APART}", TIGHTEST, 1)
    assert plain.startswith(tail) or (verdict.kind == "paced" and f"; on the figures, {tail}" in plain), verdict.text
    assert ". How sure: " in verdict.text
    assert " ".join(verdict.text.split()) in " ".join(result.stdout.split())
    shown = cli("show", str(path))
    assert shown.exit_code == 0 and shown.stdout == result.stdout


@LINUX_ONLY
def test_sweep_prints_the_seed_001_table(tmp_path: Path) -> None:
    path = tmp_path / "sweep.json"
    result = cli("sweep", "--accept-batch", "1,0", "--mode", "epoll", *SMALL, "--json", str(path))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "|   performance |  lat-avg | lat-stdev |  lat-99% |" in out
    capped = re.search(r"^1 limit  \| +[\d.]+tps \| +[\d.]+ms \| +[\d.]+ms \| +[\d.]+ms \| +(\d+) \|", out, re.M)
    assert capped and int(capped[1]) == 1  # the most any worker accepted in one wakeup
    assert re.search(r"^no limit \| +[\d.]+tps", out, re.M)
    assert json.loads(path.read_text())["kind"] == "sweep"


# 0.2: out-of-range numbers are refused by click's ranges naming the option typed ("Invalid value for
# '--concurrency' / '-c': 0 is not in the range x>=1."); every message is still one line, exit 2.
@pytest.mark.parametrize(
    ("args", "messages"),
    [
        (["latency", "--concurrency", "0"], ["Invalid value for '--concurrency'", "0 is not in the range x>=1"]),
        (["latency", "--concurrency", "-5"], ["Invalid value for '--concurrency'", "-5 is not in the range x>=1"]),
        (["latency", "--concurrency", "99999999"], ["open-file limit"]),
        (["latency", "--duration", "10x"], ["is not a duration such as 10s"]),
        (["latency", "--duration", "0s"], ["not a positive duration"]),
        (["latency", "--requests", "0"], ["Invalid value for '--requests'", "0 is not in the range 1<="]),
        (["latency", "-n", "0"], ["Invalid value for '--connections'", "0 is not in the range 1<="]),
        (["latency", "--requests", "5", "--duration", "1s"], ["or --duration, not both"]),
        (["latency", "-n", "5", "--duration", "1s"], ["--connections (-n) or --duration, not both"]),
        (["latency", "--driver-procs", "0"], ["Invalid value for '--driver-procs'", "0 is not in the range 1<="]),
        (["latency", "--workers", "-1"], ["Invalid value for '--workers'", "-1 is not in the range 1<="]),
        (["latency", "--work-us", "5", "--work-ms", "1"], ["give --work once", "its old spellings"]),
        (["latency", "--modes", "blocking,nope"], ["'nope' is not a mode of builtin"]),
        (["latency", "--compare", "blocking,nope"], ["'nope' is not a mode of builtin"]),
        (["latency", "--cpus", "4096"], ["--cpus: CPU 4096 not available here"]),
        (["latency", "--cpus", "1-0"], ["is not a CPU list"]),
        (["sweep", "--accept-batch", "1,x"], ["Invalid value for '--accept-batch'", "not a list of whole numbers"]),
        (["sweep", "--accept-batch", "-1"], ["Invalid value for '--accept-batch'", "must be between 0 and"]),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], messages: list[str]) -> None:
    result = cli(*args)
    assert_one_error_line(result, 2, *messages)
    assert result.stdout == ""


@LINUX_ONLY
def test_sigterm_stops_workers_and_drivers_with_one_line() -> None:
    proc = subprocess.Popen(
        [
            *CLI,
            "latency",
            "-w",
            "2",
            "-c",
            "4",
            "--duration",
            "60s",
            "--work-us",
            "200",
            "--driver-procs",
            "2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        me = psutil.Process(proc.pid)
        # 2 workers + 2 drivers (+ possibly a multiprocessing helper): the load is running.
        wait_for(lambda: len(child_processes(proc.pid)), lambda n: n >= 4, 20.0, "2 workers and 2 drivers")
        started = [p.pid for p in me.children(recursive=True)]
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143
    assert err.strip().splitlines() == ["accept-order: error: terminated; all workers stopped"]

    wait_for(lambda: gone(started), bool, 10.0, f"workers and drivers {started} to be gone")
