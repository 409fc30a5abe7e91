"""ramp --repeat --clients says the load came from client hosts, as latency's does (dadf301): a ramp keeps its
hosts in its plan, not in a load, and the repeated ramp's footer ('2 workers, ...; closed loop, 200 ms per step')
names none, so 'ramp --clients c1,c2 --repeat 2' read as a load driven from the server's host. The hosts are written
into a local run's file (a real cluster's repeated ramp takes minutes; the report reads the file)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

CLIENTS = {"destinations": ["c1", "c2"], "ssh_config": None, "python": None}
SAID = "load generator on each of 2 client hosts (c1, c2); "


def test_a_repeated_ramp_from_client_hosts_says_so_and_one_from_here_does_not(tmp_path: Path) -> None:
    saved = tmp_path / "ramp.json"
    ran = run_cli(
        ["ramp", "-m", "epoll", "-w", "2", "--concurrency-steps", "2,4", "--step", "200ms", "--repeat", "2",
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
