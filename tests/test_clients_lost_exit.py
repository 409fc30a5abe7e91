"""A client host lost during a run ends every command alike: the result saved and shown, then one line naming the
host and why, exit 1 (a runtime failure). `latency` exited 0 (docs/howto/cluster.md said so), and so did `sweep`,
`burst` and `ramp`: a script reading the status took the other hosts' figures for the load it asked for.

Each run here loses c2 while its first load is under way (c2's remote Python killed, as test_clients_faults.py
does to latency: an event, each host's own TCP ActiveOpens counter, not a delay); the run goes on without it, to
its last load. A real cluster (tests/cluster.py): client namespaces c1, c2, each with its own sshd. --repeat's
case (run_repeated, shared by every command) is in process, popen gateways standing in for ssh."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cluster import Cluster, cluster_fixture
from conftest import run_cli
from lost_host import c2_lost_once, spawned  # noqa: F401  # the fixtures: c1 and c2 in popen gateways, c2 lost once
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
# request (it has no open loop), and a burst whose kept connections each ask 50 requests of 1 ms.
# What is asserted (c2 lost in the first load, the run going on to its last, exit 1 after the file) needs a load
# under way, not a heavy one. A closed loop with --work spins its workers for the whole --duration: the sweep's
# one worker (two spun two CPUs for both 6 s loads, most of the file's CPU on an idle machine) for 4 s, c2's
# TICKED_CONNECTS reached in well under 1 s at up to 500 connections a second a host; the ramp's steps 4 s too (6:
# 1,400 connections more after c2's TICKED_CONNECTS, about 1 s into the first). A burst's spin is its
# requests': the second burst one connection more than the first (60 were 1 s more of spin, for nothing asserted)
COMMANDS = {
    "sweep": (["-w", "1", "--accept-batch", "1,0", "-c", "4", "--work", "1ms", "--duration", "4s"], TICKED_CONNECTS),
    "ramp": (["-w", "2", "--rates", "400,500", "--step", "4s", "--keep-going"], TICKED_CONNECTS),
    # each host opens its 20 of the first burst's 40 at once (the smallest runs first): all it opens in that burst
    "burst": (
        ["-w", "2", "--clients", "40,41", "--requests-per-connection", "50", "--work", "1ms"],
        UNDER_WAY_CONNECTS,
    ),
}


# Each command's two loads as its line names them, and where its file keeps each load's hosts
HELD = {
    "sweep": ("accept-batch 1", "accept-batch none"),
    "ramp": ("the 400/s step", "the 500/s step"),
    "burst": ("epoll's burst of 40", "epoll's burst of 41"),
}
LOADS = {
    "sweep": lambda document: document["runs"],
    "ramp": lambda document: document["steps"],
    "burst": lambda document: document["runs"][0]["cells"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_host_lost_mid_run_ends_the_command_with_exit_1_after_the_result(
    cluster: Cluster, tmp_path: Path, command: str
) -> None:
    extra, connects = COMMANDS[command]
    hosts = "--client-hosts" if command == "burst" else "--clients"  # burst's --clients counts connections
    config = own_config(cluster, tmp_path)
    before = opened(cluster)
    run = start(tmp_path, command, hosts, "c1,c2", "--ssh-config", config, "--host", bridge(cluster), *extra)
    under_way(run, cluster, before, connects)
    _remote_python(cluster, "c2").kill()
    assert run.wait() == 1, run.err.text
    saved, error = run.error_lines()  # the file first, then the one line
    assert saved == f"wrote {run.json_path}", run.err.text
    # c2 is reached again for the second load (its sshd is up: loads/hosts/driven.py) and drives its share, so the
    # line says per load what the file holds ('what the other hosts drove' of both before: cli/hosts_lost.py)
    first, second = HELD[command]
    held = f"what the other hosts drove in {first}, and what every host drove in {second}"
    assert re.fullmatch(LOST + f"; the report and {re.escape(str(run.json_path))} hold {re.escape(held)}", error)
    assert re.search(r'"lost": "its connection closed', run.json_path.read_text())  # the file names it too
    loads = LOADS[command](json.loads(run.json_path.read_text()))
    assert [[h["lost"] is None for h in load["hosts"]] for load in loads] == [[True, False], [True, True]], loads
    assert "Traceback" not in run.err.text
    assert_nothing_left(cluster, str(tmp_path))


def test_a_host_lost_in_a_round_ends_repeat_with_exit_1(
    c2_lost_once: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    """--repeat (run_repeated, every command's) the same way: c2's channel ends in place of its first round's result,
    as a host lost mid-load leaves it; the second round runs, then the line and exit 1. popen gateways stand in for
    ssh (test_clients_kept.py): no cluster."""
    address = c2_lost_once
    saved = tmp_path / "repeat.json"
    args = ["latency", "--clients", "c1,c2", "--host", address, "-w", "2", "-n", "200", "-c", "4", "--repeat", "2"]
    result = run_cli([*args, "--json", str(saved)])
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if not line.startswith("accept-order: warning: ")]
    assert lines[0] == f"wrote {saved}", result.stderr
    said = "accept-order: error: client host c2 was lost during the run: its connection closed after at least "
    assert len(lines) == 2 and lines[1].startswith(said), result.stderr
    # per round: c2 drove its share of the second (cli/hosts_lost.py; 'what the other hosts drove' of both before)
    rounds = "what the other hosts drove in epoll (round 1), and what every host drove in epoll (round 2)"
    assert lines[1].endswith(f"; the report and {saved} hold {rounds}"), result.stderr
    first, second = (row[0]["hosts"] for row in json.loads(saved.read_text())["rounds"])
    assert [h["lost"] is None for h in first] == [True, False], first
    assert [h["lost"] is None for h in second] == [True, True], second  # reached anew for the next round
