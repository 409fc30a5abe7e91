"""--clients (load from client hosts, tests/cluster.py namespaces) at a --target some of whose replies name no worker:
each host's outcome in the file says what it served on no worker's row (`unnamed`), beside its per-worker counts.

A host's `served` held only what the replies named (at a plain page all zeros, '0 0 0' beside its served_total of
50), which a reader of the file took for each worker's count; `show --table hosts` derived an `unnamed` column, the
file itself said nothing. Now the file keeps it (derived, checked on load: a hostile one is one line, exit 1), and
merge adds it. The server: one Debian nginx in srv answering 'worker $pid' on an even connection serial and 'hello' on
an odd one; the witness its access log, a line per request naming what it sent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster import Cluster, cluster_fixture
from conftest import assert_one_error_line, run_cli, wait_for
from nginx_by_hand import in_srv
from test_clients_faults import own_config

cluster = cluster_fixture(clients=2)
PORT, WORKERS, REQUESTS = 8080, 2, 100


@pytest.fixture
def page(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """nginx in srv, half its replies naming a worker: its address and access log."""
    d = tmp_path_factory.mktemp("nginx")
    named = 'map $connection $sent { ~[02468]$ "worker $pid"; default "hello"; }'
    with in_srv(cluster, d, reply="$sent", logged="$sent", port=PORT, workers=WORKERS, http=named) as address:
        yield address, d / "access.log"


def test_each_host_keeps_what_it_served_on_no_row(cluster: Cluster, page: tuple[str, Path], tmp_path: Path) -> None:
    address, log = page
    path = tmp_path / "latency.json"
    args = ["latency", "--target", address, "--protocol", "http", "--clients", "c1,c2", "-n", str(REQUESTS), "-c", "4"]
    result = run_cli([*args, "--ssh-config", own_config(cluster, tmp_path), "--json", str(path)])
    assert result.exit_code == 0, result.output
    logged = wait_for(
        lambda: log.read_text().splitlines() if log.exists() else [],
        lambda got: len(got) >= REQUESTS,
        30,
        "nginx's access log",
    )
    plain = sum(1 for line in logged if line == "hello")
    assert len(logged) == REQUESTS and 0 < plain < REQUESTS, logged
    document = json.loads(path.read_text())
    hosts = document["hosts"]
    assert sum(h["served_total"] for h in hosts) == REQUESTS
    for h in hosts:  # each host's own: what it served less what its replies placed on a worker
        assert h.get("unnamed", 0) == h["served_total"] - sum(h["served"]), h
    assert sum(h.get("unnamed", 0) for h in hosts) == plain  # nginx's count of the pages naming no worker

    hostile = json.loads(path.read_text())
    hostile["hosts"][0]["unnamed"] = hosts[0].get("unnamed", 0) + 1
    edited = tmp_path / "hostile.json"
    edited.write_text(json.dumps(hostile))
    assert_one_error_line(run_cli(["show", str(edited)]), 1, "hosts[0].unnamed")
    old = json.loads(path.read_text())  # a file from before the field: read, the CSV's column derived
    for h in old["hosts"]:
        h.pop("unnamed", None)
    started = old["environment"]["started_at"]
    old["environment"]["started_at"] = started.replace(started[:4], str(int(started[:4]) - 1), 1)  # another run's
    before = tmp_path / "before.json"
    before.write_text(json.dumps(old))
    merged = tmp_path / "merged.json"
    assert run_cli(["merge", str(path), str(before), "--json", str(merged)]).exit_code == 0
    added = {h["destination"]: h.get("unnamed", 0) for h in json.loads(merged.read_text())["hosts"]}
    assert added == {h["destination"]: 2 * h.get("unnamed", 0) for h in hosts}, added
