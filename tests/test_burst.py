"""`accept-order burst` (seed 004's table): N clients at once; every one is served or failed, the spread and
the kernel's counters are kept, the limits are checked (and the open-file limit raised) before anything
starts, and fd-pass's acceptor survives a burst larger than its workers' sockets can queue."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli

from accept_order.errors import PlanError
from accept_order.experiments.burst import run as burst
from accept_order.experiments.burst.run import BurstPlan, run_bursts
from accept_order.spec import ServerSpec

COMMAND = [sys.executable, "-m", "accept_order", "burst"]


def test_every_client_is_served_or_failed_and_the_table_has_a_row_per_count(tmp_path: Path) -> None:
    out = tmp_path / "burst.json"
    proc = subprocess.run(
        [*COMMAND, "--modes", "epoll,reuseport", "-w", "3", "--clients", "400,200", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["kind"] == "burst" and [r["server"]["mode"] for r in doc["runs"]] == ["epoll", "reuseport"]
    for run in doc["runs"]:
        assert [c["clients"] for c in run["cells"]] == [200, 400]  # smallest first
        for cell in run["cells"]:
            # The listen backlog (511, per listener) holds every client of a burst: none may fail.
            assert cell["errors"] == {} and sum(cell["served"]) == cell["clients"], cell
            assert sum(d["requests"] for d in cell["drivers"]) == cell["clients"]
            if run["server"]["mode"] == "reuseport":  # a hash over 200+ connections reaches every listener
                assert len(cell["served"]) == 3 and min(cell["served"]) > 0, cell["served"]
    rows = [line.split()[0] for line in proc.stdout.splitlines() if line.strip()[:3].isdigit()]
    assert rows == ["200", "400"]
    shown = subprocess.run([sys.executable, "-m", "accept_order", "show", str(out)], capture_output=True, text=True)
    assert shown.returncode == 0 and "accept-order burst" in shown.stdout


def test_fd_pass_acceptor_never_blocks_on_a_busy_worker() -> None:
    """3000 connections for 2 workers: far more than their sockets queue. A blocking acceptor deadlocks with
    a worker writing its acknowledgement; a backlog that holds the burst leaves no other way to fail."""
    run = run_bursts(ServerSpec(mode="fd-pass", workers=2, backlog=4096), BurstPlan((3000,), 2, 20.0))
    (cell,) = run.cells
    assert cell.errors == {} and sum(cell.served) == 3000
    assert max(cell.served) - min(cell.served) <= 1  # round-robin, exactly


def test_the_open_file_limit_is_raised_for_the_burst() -> None:
    proc = subprocess.run(
        ["bash", "-c", f"ulimit -Sn 256 && {sys.executable} -m accept_order burst --clients 600 -w 2 --modes epoll"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "raised the open-file limit from 256 to 632" in proc.stdout


def test_a_burst_beyond_the_hard_limit_is_one_line() -> None:
    proc = subprocess.run(
        ["bash", "-c", f"ulimit -n 512 && {sys.executable} -m accept_order burst --clients 1000"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert "needs 1032 open files; the hard limit is 512" in proc.stderr and "Traceback" not in proc.stderr


def test_more_clients_than_local_ports_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(burst, "local_ports", lambda: 1000)
    with pytest.raises(PlanError, match="1000 local ports"):
        burst.make_room(2000)


def test_servers_is_the_same_option_as_server() -> None:
    result = run_cli(["burst", "--servers", "builtin", "--modes", "epoll,reuseport", "--clients", "50", "-w", "2"])
    assert result.exit_code == 0, result.output
    header = next(line for line in result.stdout.splitlines() if line.strip().startswith("clients"))
    assert header.split() == ["clients", "epoll", "reuseport"]
