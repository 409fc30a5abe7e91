"""The `latency` and `sweep` commands: output format, JSON + show, bad input as one line, SIGTERM."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from conftest import gone, wait_for

from accept_order.cpus import allowed_cpus

LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs epoll and procfs")
CLI = [str(Path(sys.executable).with_name("accept-order"))]
SMALL = ["-w", "2", "-n", "200", "-c", "8", "--work-us", "100"]
SUMMARY = re.compile(
    r"^Duration in ms \((?P<mode>[\w-]+)\) min:\d+\.\d\d avg:\d+\.\d\d med=\d+\.\d\d max:\d+\.\d\d "
    r"dev:\d+\.\d\d count:(?P<n>\d+)$",
    re.M,
)


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    # COLUMNS=80: what a pipe gets; the mmhistogram lines are longer and must still print whole.
    env = {**os.environ, "COLUMNS": "80"}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, env=env)


@LINUX_ONLY
def test_latency_prints_mmhistogram_lines_and_writes_json(tmp_path: Path) -> None:
    path = tmp_path / "lat.json"
    proc = cli("latency", "--mode", "blocking", *SMALL, "--json", str(path))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    match = SUMMARY.search(out)
    assert match and match["mode"] == "blocking" and match["n"] == "200"
    assert "Duration in ms (blocking):\n value |" + "-" * 50 + " count\n" in out
    assert "p99.9 ms" in out and "req/s" in out
    assert re.search(r"\b200\s+connections, 8 concurrent", out), out  # 0.2: "N connections", not "N requests"
    assert "requests" not in out
    assert len(re.findall(r"^pid \d+'s current affinity list: \S+$", out, re.M)) == 2
    # Not a terminal: no progress bar, only the note about the file.
    assert proc.stderr.strip() == f"wrote {path}"
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
    assert shown.returncode == 0, shown.stderr
    assert SUMMARY.search(shown.stdout)[0] == match[0]  # type: ignore[index]


@LINUX_ONLY
def test_pin_puts_each_worker_on_its_own_cpu() -> None:
    cpus = allowed_cpus()
    proc = cli("latency", *SMALL[2:], "-w", str(len(cpus)), "--pin")
    assert proc.returncode == 0, proc.stderr
    listed = re.findall(r"^pid \d+'s current affinity list: (\S+)$", proc.stdout, re.M)
    assert listed == [str(c) for c in cpus]


@LINUX_ONLY
def test_duration_instead_of_a_count() -> None:
    proc = cli("latency", "-w", "2", "-c", "4", "--duration", "300ms")
    assert proc.returncode == 0, proc.stderr
    assert "0.3 s, 4 concurrent" in proc.stdout


@LINUX_ONLY
def test_compare_prints_both_histograms_a_table_and_a_verdict(tmp_path: Path) -> None:
    # 0.2: --modes (0.1's --compare is a hidden alias, checked in test_cli.py's bad-input list).
    path = tmp_path / "cmp.json"
    proc = cli("latency", "--modes", "blocking,reuseport", *SMALL, "--json", str(path))
    assert proc.returncode == 0, proc.stderr
    assert [m["mode"] for m in SUMMARY.finditer(proc.stdout)] == ["blocking", "reuseport"]
    table = proc.stdout[proc.stdout.index("latency by mode (ms)") :]
    assert re.search(r"^blocking +\d", table, re.M) and re.search(r"^reuseport +\d", table, re.M)
    assert "Verdict: " in proc.stdout
    doc = json.loads(path.read_text())
    assert doc["kind"] == "latency-compare" and len(doc["runs"]) == 2 and "text" in doc["verdict"]
    assert [run["server"]["mode"] for run in doc["runs"]] == ["blocking", "reuseport"]
    shown = cli("show", str(path))
    assert shown.returncode == 0 and "Verdict: " in shown.stdout


@LINUX_ONLY
def test_sweep_prints_the_seed_001_table(tmp_path: Path) -> None:
    path = tmp_path / "sweep.json"
    proc = cli("sweep", "--accept-batch", "1,0", "--mode", "epoll", *SMALL, "--json", str(path))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
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
        (["latency", "--work-us", "5", "--work-ms", "1"], ["--work-ms or --work-us, not both"]),
        (["latency", "--modes", "blocking,nope"], ["unknown mode(s): nope"]),
        (["latency", "--compare", "blocking,nope"], ["unknown mode(s): nope"]),
        (["latency", "--cpus", "4096"], ["--cpus: CPU 4096 not available here"]),
        (["latency", "--cpus", "1-0"], ["is not a CPU list"]),
        (["sweep", "--accept-batch", "1,x"], ["Invalid value for '--accept-batch'", "not a list of whole numbers"]),
        (["sweep", "--accept-batch", "-1"], ["Invalid value for '--accept-batch'", "must be between 0 and"]),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], messages: list[str]) -> None:
    proc = cli(*args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("accept-order: error: ")
    for message in messages:
        assert message in lines[0], proc.stderr
    assert proc.stdout == ""


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
        wait_for(lambda: len(me.children()), lambda n: n >= 4, 20.0, "2 workers and 2 drivers")
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
