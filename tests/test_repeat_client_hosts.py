"""latency --repeat --clients says the load came from client hosts: its medians' table names none, and the report of
'latency --clients c1,c2,c3 --repeat 2' (and 'show' of its file) read as a load driven from the server's host.
The hosts are written into a local run's file (a real cluster's repeat takes minutes; the report reads the file)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

CLIENTS = {"destinations": ["c1", "c2"], "ssh_config": None, "python": None}


def test_a_repeat_from_client_hosts_says_so_and_one_from_here_does_not(tmp_path: Path) -> None:
    saved = tmp_path / "repeat.json"
    ran = run_cli(["latency", "-m", "epoll", "-w", "2", "-n", "200", "--repeat", "2", "--json", str(saved)])
    assert ran.exit_code == 0, ran.stderr
    assert "client host" not in ran.stdout
    document = json.loads(saved.read_text())
    for row in document["rounds"]:
        for run in row:
            run["load"]["clients"] = CLIENTS
    from_hosts = tmp_path / "from_hosts.json"
    from_hosts.write_text(json.dumps(document))
    shown = run_cli(["show", str(from_hosts)])
    assert shown.exit_code == 0, shown.stderr
    assert "load generator on each of 2 client hosts (c1, c2); " in " ".join(shown.stdout.split()), shown.stdout
