"""A burst's kernel counters say which overflows were the server's: its listeners' own drops beside the namespace's.

'burst --clients 50,100 -w 2' beside another program's backlog-1 listener that never accepts said 'epoll, 50: served
50 (25 25); ListenOverflows +3, ListenDrops +3' as if the burst had overflowed: the counters are every listener's of
the network namespace. Each burst now reads the server's own listeners' drops (probes/listeners.listener_drops, tested
against SO_MEMINFO in test_ramp_listener_drops.py): 'ListenOverflows +15, ... (host-wide; the server's listeners
dropped none)'; a burst that did overflow (--backlog 8, 300 clients, 1 ms of work): '... dropped 626' beside +626."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conftest import run_cli

from accept_order.experiments.burst.result import BurstCell, BurstResult

GOLDEN = Path(__file__).parent / "data" / "golden" / "burst.json"


def _lines(tmp_path: Path, drops: list[int | None]) -> list[str]:
    doc: dict[str, Any] = json.loads(GOLDEN.read_text())
    cells = doc["runs"][0]["cells"]  # epoll, 20 and 50 clients
    for cell, dropped in zip(cells, drops, strict=True):
        cell["counters"] = {"TcpExtListenOverflows": 15, "TcpExtListenDrops": 15}
        if dropped is not None:
            cell["listener_drops"] = dropped
    BurstResult.from_dict(doc)  # the schema takes it
    path = tmp_path / "burst.json"
    path.write_text(json.dumps(doc))
    out = run_cli(["show", str(path)]).stdout
    return [line for line in out.splitlines() if line.startswith("  epoll, ")]


def test_the_line_says_whose_the_overflows_were(tmp_path: Path) -> None:
    none, some = _lines(tmp_path, [0, 15])
    assert "ListenOverflows +15, ListenDrops +15 (host-wide; the server's listeners dropped none)" in none, none
    said = "ListenOverflows +15, ListenDrops +15 (host-wide; the server's listeners dropped 15 handshake packets)"
    assert said in some, some


def test_nothing_is_said_of_drops_where_no_listen_counter_moved(tmp_path: Path) -> None:
    doc: dict[str, Any] = json.loads(GOLDEN.read_text())
    cell = doc["runs"][0]["cells"][0]
    cell["counters"], cell["listener_drops"] = {"TcpExtTCPAbortOnClose": 250}, 0
    path = tmp_path / "burst.json"
    path.write_text(json.dumps(doc))
    line = next(x for x in run_cli(["show", str(path)]).stdout.splitlines() if x.startswith("  epoll, 20:"))
    assert "TCPAbortOnClose +250; slowest" in line, line


def test_without_the_reading_the_counters_read_as_before(tmp_path: Path) -> None:
    for line in _lines(tmp_path, [None, None]):
        assert "ListenOverflows +15, ListenDrops +15; slowest" in line, line


def test_a_cell_keeps_its_drops_in_the_file() -> None:
    cell = BurstCell.from_dict(json.loads(GOLDEN.read_text())["runs"][0]["cells"][0])
    assert cell.listener_drops is None and "listener_drops" not in cell.to_dict()
    kept = BurstCell.from_dict({**cell.to_dict(), "listener_drops": 0})
    assert kept.listener_drops == 0 and kept.to_dict()["listener_drops"] == 0
