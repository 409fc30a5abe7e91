"""A client host lost in one mode's load and reached again for the next: the error line says what the file holds per
mode (cli/hosts_lost.py), not 'what the other hosts drove' of every mode.

'latency --modes epoll,reuseport --clients c1,c2' with c2's channel ending in place of epoll's result (as a host lost
mid-load leaves it) ran reuseport with both hosts, c2 reached anew, and then said the report and the file 'hold what
the other hosts drove': of reuseport, untrue. popen gateways stand in for ssh (test_clients_kept.py): no cluster."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli
from lost_host import c2_lost_once, spawned  # noqa: F401  # the fixtures: c1 and c2 in popen gateways, c2 lost once


def test_a_host_lost_in_one_mode_and_back_for_the_next_is_said_per_mode(
    c2_lost_once: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    address = c2_lost_once
    saved = tmp_path / "modes.json"
    args = ["latency", "--clients", "c1,c2", "--host", address, "-w", "2", "-n", "200", "-c", "4"]
    result = run_cli([*args, "--modes", "epoll,reuseport", "--json", str(saved)])
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if not line.startswith("accept-order: warning: ")]
    assert lines[0] == f"wrote {saved}" and len(lines) == 2, result.stderr
    assert lines[1].startswith("accept-order: error: client host c2 was lost during the run: "), lines[1]
    held = f"; the report and {saved} hold what the other hosts drove in epoll, and what every host drove in reuseport"
    assert lines[1].endswith(held), lines[1]
    epoll, reuseport = (run["hosts"] for run in json.loads(saved.read_text())["runs"])  # the file, the witness
    assert [h["lost"] is None for h in epoll] == [True, False], epoll
    assert [h["lost"] is None for h in reuseport] == [True, True], reuseport
