"""ramp --repeat --clients and burst --repeat --client-hosts say the load came from client hosts, as latency's does
(dadf301, which reads them from a run's load). A ramp keeps them in its plan and the repeated ramp's footer ('2 workers,
...; open loop, 200 ms per step' for this file's ramp) names none; a burst keeps them in its cells. 'ramp --clients
c1,c2 --repeat 2' read as a load driven from the server's host, and so did a burst. The hosts are written into a local
run's file (a real cluster's repeat takes minutes; the report reads the file)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli
from test_clients_report import host

CLIENTS = {"destinations": ["c1", "c2"], "ssh_config": None, "python": None}
SAID = "load generator on each of 2 client hosts (c1, c2); "


def test_a_repeated_ramp_from_client_hosts_says_so_and_one_from_here_does_not(tmp_path: Path) -> None:
    # open-loop steps of a few connections: closed-loop ones took every CPU for each step, and the footer's hosts
    # come from the plan whatever the loop
    saved = tmp_path / "ramp.json"
    ran = run_cli(
        ["ramp", "-m", "epoll", "-w", "2", "--rates", "50,100", "--step", "200ms", "--repeat", "2",
         "--json", str(saved)]
    )  # fmt: skip
    assert ran.exit_code == 0, ran.stderr
    assert "client host" not in ran.stdout
    document = json.loads(saved.read_text())
    for row in document["rounds"]:
        for run in row:
            run["plan"]["client_hosts"] = CLIENTS  # as run.RampPlan saves them
    from_hosts = tmp_path / "from_hosts.json"
    from_hosts.write_text(json.dumps(document))
    shown = run_cli(["show", str(from_hosts)])
    assert shown.exit_code == 0, shown.stderr
    assert SAID in " ".join(shown.stdout.split()), shown.stdout


def test_a_repeated_burst_from_client_hosts_says_so_and_one_from_here_does_not(tmp_path: Path) -> None:
    saved = tmp_path / "burst.json"
    ran = run_cli(["burst", "--modes", "epoll", "-w", "2", "--clients", "10,20", "--repeat", "2", "--json", str(saved)])
    assert ran.exit_code == 0, ran.stderr
    assert "client host" not in ran.stdout
    document = json.loads(saved.read_text())
    for row in document["rounds"]:
        for run in row:
            for cell in run["cells"]:
                cell["hosts"] = [host("c1").to_dict(), host("c2").to_dict()]  # as each burst's hosts are saved
    from_hosts = tmp_path / "from_hosts.json"
    from_hosts.write_text(json.dumps(document))
    shown = run_cli(["show", str(from_hosts)])
    assert shown.exit_code == 0, shown.stderr
    assert SAID in " ".join(shown.stdout.split()), shown.stdout
