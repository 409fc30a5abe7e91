"""A signal in the moments after a load (or one step of it) has finished keeps what finished: the driver's
report read off its pipe, burst's cell and ramp's step while their counters are read, herd's mode and the
atlas's row whose runs had ended. The command then ends with the signal's status and a file holding them.
Each signal is sent by the command's own process from inside that window (a patched step), so the test
needs no timing."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import run_cli

from accept_order.experiments.burst import run as burst_run
from accept_order.experiments.ramp import run as ramp_run
from accept_order.probes import netstat
from accept_order.probes.evidence import EvidenceCapture


def _signalling_on(original: Callable[..., Any], call: int, signum: int = signal.SIGINT) -> Callable[..., Any]:
    """`original`, with `signum` sent to this process as its `call`-th call starts."""
    calls = [0]

    def step(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == call:
            signal.raise_signal(signum)  # the handler runs here, before `original` (as a signal in it would)
        return original(*args, **kwargs)

    return step


def test_a_signal_as_a_drivers_report_is_read_keeps_the_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Driver 0's report is off its pipe when the signal comes: it is kept (not taken for a driver that died
    before reporting, exit 1), the other driver is stopped and reports, and the run is saved (exit 130)."""
    original = Connection.recv
    sent = [False]

    def recv(self: Connection) -> Any:
        message = original(self)
        if not sent[0] and isinstance(message, tuple) and message[0] == "result":
            sent[0] = True
            signal.raise_signal(signal.SIGINT)  # handled at once: between the read and the store
        return message

    monkeypatch.setattr(Connection, "recv", recv)
    out = tmp_path / "l.json"
    result = run_cli(["latency", "-w", "2", "-n", "400", "-c", "4", "--driver-procs", "2", "--json", str(out)])
    assert result.exit_code == 130, result.output
    assert sent[0] and "before reporting" not in result.output and "Traceback" not in result.output
    doc = json.loads(out.read_text())
    assert [d["index"] for d in doc["drivers"]] == [0, 1]  # the report read when the signal came is there
    assert 200 <= sum(doc["served"]) <= 400, doc["served"]  # driver 0's share whole, driver 1's so far


def test_a_signal_while_a_bursts_counters_are_read_keeps_its_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The counters' second read is the first burst's `after`: the signal there keeps that burst."""
    counters = SimpleNamespace(
        read_counters=_signalling_on(netstat.read_counters, 2),
        counter_deltas=netstat.counter_deltas,
        WATCHED_COUNTERS=netstat.WATCHED_COUNTERS,
    )
    monkeypatch.setattr(burst_run, "netstat", counters)
    out = tmp_path / "b.json"
    result = run_cli(["burst", "--modes", "epoll", "-w", "2", "--clients", "30,60", "--json", str(out)])
    assert result.exit_code == 130, result.output
    (run,) = json.loads(out.read_text())["runs"]
    assert [c["clients"] for c in run["cells"]] == [30] and run["interrupted"], run
    (cell,) = run["cells"]
    assert sum(cell["served"]) == 30 and not cell.get("interrupted"), cell  # whole: the burst had finished


def test_a_signal_while_a_ramp_steps_sockets_are_read_keeps_the_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """/proc/net/tcp is read right after the step's load: the signal there keeps that step."""
    monkeypatch.setattr(ramp_run, "socket_summary", _signalling_on(ramp_run.socket_summary, 1))
    out = tmp_path / "r.json"
    result = run_cli(["ramp", "-w", "2", "--concurrency-steps", "2,4", "--step", "300ms", "--json", str(out)])
    assert result.exit_code == 130, result.output
    doc = json.loads(out.read_text())
    assert [s["offered"] for s in doc["steps"]] == [2] and doc["interrupted"], doc["steps"]
    (step,) = doc["steps"]
    assert sum(step["served"]) > 0 and not step["interrupted"] and step["sockets"], step


def test_a_signal_after_a_herd_modes_load_keeps_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first mode's load has finished and its workers are being stopped: that mode is saved (exit 130)."""
    monkeypatch.setattr(EvidenceCapture, "after", _signalling_on(EvidenceCapture.after, 1))
    out = tmp_path / "h.json"
    result = run_cli(["herd", "--modes", "blocking,epoll", "-w", "2", "-n", "5", "--json", str(out)])
    assert result.exit_code == 130, result.output
    assert f"wrote {out}" in result.stderr and "Traceback" not in result.output
    doc = json.loads(out.read_text())
    assert [r["server"]["mode"] for r in doc["runs"]] == ["blocking"] and doc["interrupted"] is True
    assert len(doc["runs"][0]["records"]) == 5 and not doc["runs"][0]["interrupted"]
    shown = run_cli(["show", str(out)])
    assert shown.exit_code == 0 and "blocking" in shown.stdout


def test_a_signal_after_an_atlas_rows_load_keeps_the_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A row's second run (the closed-loop load) has finished when the signal comes: the row is kept whole."""
    monkeypatch.setattr(EvidenceCapture, "after", _signalling_on(EvidenceCapture.after, 2))
    out = tmp_path / "a.json"
    args = ["--server", "builtin", "-w", "2", "-n", "4", "--load-connections", "60", "-c", "4"]
    result = run_cli(["atlas", *args, "--json", str(out)])
    assert result.exit_code == 130, result.output
    doc = json.loads(out.read_text())
    (row,) = doc["rows"]
    assert doc["interrupted"] is True and row["error"] is None and row["order"], row
    assert sum(row["served"]) + row["failed"] == 60, row
    assert run_cli(["show", str(out)]).exit_code == 0
