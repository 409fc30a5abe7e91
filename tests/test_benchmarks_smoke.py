"""The benchmarks run end to end at tiny sizes. No timing is asserted here: figures belong to the
benchmark's own output (benchmarks/README.md), where they sit next to a reference measured alongside."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_run.py"
LATENCY_BENCH = BENCH.with_name("bench_latency_driver.py")
HAVE_CC = any(shutil.which(c) for c in ("cc", "gcc", "clang"))
LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs epoll")


def run_bench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=180)


@LINUX_ONLY
def test_run_and_rate_parts_complete_and_print_a_ratio() -> None:
    proc = run_bench("--connections", "200", "--rounds", "1", "--repeat", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert re.search(r"accept-order run epoll : median \d+\.\d+ s", out), out
    assert re.search(r"python -c pass\s+: median \d+\.\d+ s", out), out
    # The libraries' floor: the modules `run` imports, none of the package's (click and rich among them)
    floor = re.search(r"libraries alone: the (\d+) modules `run` imports that are not accept-order's", out)
    assert floor and int(floor.group(1)) > 20, out
    # Every driven connection is accounted for: 200 served, shared by the 3 workers.
    served = re.search(r"driver  :\s+\d+ conn/s over 200, failed 0, served per worker \[(\d+), (\d+), (\d+)\]", out)
    assert served and sum(int(n) for n in served.groups()) == 200, out
    assert re.search(r"served per worker \[.*\], CPU \d+\.\d us/conn$", out, re.M), out  # issue 30
    if HAVE_CC:
        assert re.search(r"C client:\s+\d+ conn/s over 200, failed 0, CPU \d+\.\d us/conn$", out, re.M), out
        assert re.search(r"ratio driver/C: \d+\.\d+ ", out), out
    else:
        assert "ratio driver/C: n/a" in out, out


@LINUX_ONLY
@pytest.mark.skipif(not HAVE_CC, reason="the instrumentation part drives with the C client")
def test_instrumentation_part_completes() -> None:
    proc = run_bench("--only", "instrumentation", "--connections", "200", "--rounds", "1")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for kind in ("memory", "pipe", "queue"):
        assert re.search(rf"^{kind}\s*:\s+\d+ conn/s .*server CPU\s+\d+\.\d us/conn", proc.stdout, re.M), proc.stdout


# bare_server("queue") with its one worker ended while it holds the queue's write lock, as a worker whose feeder thread
# is writing an item when its SIGTERM comes is: the worker takes the lock, then says so on a pipe, and the server is
# ended once it has.
_HELD_LOCK = """
import os, select, sys
sys.path.insert(0, sys.argv[1])
import _run_instrumentation as ri
told_r, told_w = os.pipe()
bare_worker = ri._bare_worker
def holding_the_lock(sock, report):
    for cell in report.__closure__ or ():
        if hasattr(cell.cell_contents, "_wlock"):
            cell.cell_contents._wlock.acquire()
    os.write(told_w, b"x")
    bare_worker(sock, report)
ri._bare_worker = holding_the_lock
with ri.bare_server("queue", 1):
    if not select.select([told_r], [], [], 30)[0]:
        sys.exit("the worker never took the lock")
"""


@LINUX_ONLY
def test_a_queue_server_ends_though_a_worker_ended_holding_the_queues_lock() -> None:
    """Its end put a sentinel on the queue, whose feeder waited for ever on a lock the dead worker held (the
    instrumentation part hung so once beside the whole suite)."""
    proc = subprocess.run(
        [sys.executable, "-c", _HELD_LOCK, str(BENCH.parent)], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_bad_size_is_one_line() -> None:
    proc = run_bench("--connections", "0")
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and "--connections" in proc.stderr


@LINUX_ONLY
def test_rate_part_without_a_compiler_still_reports() -> None:
    # No cc on PATH: the C reference is skipped with a reason, the driver is still measured.
    proc = subprocess.run(
        [sys.executable, str(BENCH), "--only", "rate", "--connections", "50", "--rounds", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/nonexistent"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "C reference: skipped (no C compiler" in proc.stdout
    assert "ratio driver/C: n/a (no C reference)" in proc.stdout


@LINUX_ONLY
@pytest.mark.skipif(not HAVE_CC, reason="the latency driver benchmark needs its C reference client")
def test_latency_driver_part_completes_and_prints_a_ratio() -> None:
    proc = subprocess.run(
        [sys.executable, str(LATENCY_BENCH), "--requests", "400", "--concurrency", "8", "--rounds", "1"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^\s+1\s+\d+\s+\d+\s+\d+\.\d\d  ", proc.stdout, re.M), proc.stdout  # C, driver, ratio
    assert re.search(r"driver / C: median \d+\.\d+ .* over 1 rounds", proc.stdout), proc.stdout
    assert "failed requests" not in proc.stdout  # the driver served every request it made


@pytest.mark.parametrize("args", [["--rounds", "0"], ["--mode", "nope"]])
def test_latency_driver_bad_argument_is_one_line(args: list[str]) -> None:
    proc = subprocess.run([sys.executable, str(LATENCY_BENCH), *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1 and args[0] in proc.stderr
