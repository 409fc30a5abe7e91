"""A client host lost during a run ends every command alike: the result saved and shown, then one line naming the
host and why, exit 1 (a runtime failure). `latency` exited 0 (docs/howto/cluster.md said so), and so did `sweep`,
`burst` and `ramp`: a script reading the status took the other hosts' figures for the load it asked for.

Each run here loses c2 while its first load is under way (c2's remote Python killed, as test_clients_faults.py
does to latency: an event, each host's own TCP ActiveOpens counter, not a delay); the run goes on without it, to
its last load. A real cluster (tests/cluster.py): client namespaces c1, c2, each with its own sshd."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cluster import Cluster, cluster_fixture
from test_clients_faults import (
    TICKED_CONNECTS,
    UNDER_WAY_CONNECTS,
    _remote_python,
    assert_nothing_left,
    bridge,
    opened,
    own_config,
    start,
    under_way,
)

cluster = cluster_fixture(clients=2)
LOST = r"accept-order: error: client host c2 was lost during the run: its connection closed .*"

# Two loads each, the first long enough for c2 to be lost in it: a ramp's open loop of a few hundred connections a
# second (a host opens TICKED_CONNECTS in about 1 s), a sweep's closed loop held below the CPUs by 1 ms of work a
# request (it has no open loop), and a burst whose kept connections each ask 50 requests of 1 ms
COMMANDS = {
    "sweep": (["--accept-batch", "1,0", "-c", "4", "--work", "1ms", "--duration", "6s"], TICKED_CONNECTS),
    "ramp": (["--rates", "400,500", "--step", "6s", "--keep-going"], TICKED_CONNECTS),
    # each host opens its 20 of the first burst's 40 at once (the smallest runs first): all it opens in that burst
    "burst": (["--clients", "40,60", "--requests-per-connection", "50", "--work", "1ms"], UNDER_WAY_CONNECTS),
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_host_lost_mid_run_ends_the_command_with_exit_1_after_the_result(
    cluster: Cluster, tmp_path: Path, command: str
) -> None:
    extra, connects = COMMANDS[command]
    hosts = "--client-hosts" if command == "burst" else "--clients"  # burst's --clients counts connections
    config = own_config(cluster, tmp_path)
    before = opened(cluster)
    run = start(tmp_path, command, hosts, "c1,c2", "--ssh-config", config, "--host", bridge(cluster), "-w", "2", *extra)
    under_way(run, cluster, before, connects)
    _remote_python(cluster, "c2").kill()
    assert run.wait() == 1, run.err.text
    saved, error = run.error_lines()  # the file first, then the one line
    assert saved == f"wrote {run.json_path}", run.err.text
    assert re.fullmatch(
        LOST + f"; the report and {re.escape(str(run.json_path))} hold what the other hosts drove", error
    )
    assert re.search(r'"lost": "its connection closed', run.json_path.read_text())  # the file names it too
    assert "Traceback" not in run.err.text
    assert_nothing_left(cluster, str(tmp_path))
