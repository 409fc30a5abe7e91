"""`latency --rate`: an open loop, each connection timed from when it was due; saved, shown and merged."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import run_cli

LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs epoll and procfs")


@LINUX_ONLY
def test_open_loop_far_below_capacity_serves_rate_times_duration(tmp_path: Path) -> None:
    path = tmp_path / "open.json"
    result = run_cli(
        ["latency", "-w", "2", "--rate", "200", "--duration", "1s", "-c", "8", "--json", str(path)], columns=200
    )
    assert result.exit_code == 0, result.output
    assert "open loop at 200/s, 1 s, at most 8 in flight" in result.stdout
    assert "Duration in ms (epoll, open loop at 200/s)" in result.stdout
    doc = json.loads(path.read_text())
    assert doc["load"]["kind"] == "open-loop" and doc["load"]["rate"] == 200
    # Connection k of a driver is due at k / its rate; a closed loop of 8 would serve thousands in 1 s.
    # Far below capacity, every due one starts (one per driver may fall at the deadline, or miss it).
    served = doc["summary"]["count"]
    assert 0.9 * 200 <= served <= 200 + 2, served
    assert doc["errors"] == {}
    shown = run_cli(["show", str(path)], columns=200)
    assert shown.exit_code == 0 and "open loop at 200/s" in shown.stdout
    as_json = json.loads(run_cli(["show", str(path), "--format", "json"]).stdout)
    assert as_json["load"]["rate"] == 200


@LINUX_ONLY
def test_a_connection_due_while_every_slot_is_busy_is_timed_from_when_it_was_due(tmp_path: Path) -> None:
    """One worker burning 2 ms per connection, one slot, 2000 due per second: connection k cannot end before
    (k+1) x 2 ms and was due at k x 0.5 ms, so its latency is at least 1.5 ms x k + 2 ms. Timed from when it
    started (a closed loop's way), every latency would be about 2 ms."""
    path = tmp_path / "late.json"
    args = ["latency", "-w", "1", "--work-us", "2000", "--rate", "2000", "-n", "60", "-c", "1", "--driver-procs", "1"]
    result = run_cli([*args, "--json", str(path)], columns=200)
    assert result.exit_code == 0, result.output
    doc = json.loads(path.read_text())
    assert doc["summary"]["count"] == 60
    assert doc["summary"]["max_ms"] >= 1.5 * 59 + 2
    # Every connection after the first was due while the one slot was busy.
    assert doc["drivers"][0]["late"] == 59
    assert "59 of 60 connections were due while all 1 in flight were busy and started late" in result.stdout


def _saved(tmp_path: Path, name: str, rate: float | None, started: str) -> Path:
    """The golden latency result as if measured at `started`, at `rate` (None: the closed loop it was)."""
    doc = json.loads((Path(__file__).parent / "data" / "golden" / "latency.json").read_text())
    doc["environment"]["started_at"] = started
    if rate is not None:
        doc["load"] |= {"kind": "open-loop", "rate": rate}
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_merge_refuses_loads_of_different_rates(tmp_path: Path) -> None:
    a = _saved(tmp_path, "a.json", 100, "2026-01-01T00:00:00")
    b = _saved(tmp_path, "b.json", 200, "2026-01-01T00:01:00")
    result = run_cli(["merge", str(a), str(b)])
    assert result.exit_code != 0
    assert "not the same experiment" in result.stderr and "rate 100 vs 200" in result.stderr
    closed = _saved(tmp_path, "c.json", None, "2026-01-01T00:02:00")
    result = run_cli(["merge", str(a), str(closed)])
    assert result.exit_code != 0 and "not the same experiment" in result.stderr
    same = _saved(tmp_path, "d.json", 100, "2026-01-01T00:03:00")
    out = tmp_path / "merged.json"
    result = run_cli(["merge", str(a), str(same), "--json", str(out)])
    assert result.exit_code == 0, result.output
    merged = json.loads(out.read_text())
    assert merged["load"]["rate"] == 100 and merged["summary"]["count"] == 2 * 200


def test_rate_must_be_positive() -> None:
    result = run_cli(["latency", "--rate", "0", "-n", "10"])
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1, result.output
