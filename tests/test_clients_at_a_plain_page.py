"""--clients (load from client hosts) at a --target whose replies name no worker (Debian's nginx answering 'hello'):
what each host served is its own count, and no zero is given as a worker's count.

c043737b counted such replies served, on no worker's row. From client hosts the reports read right (each host's
served, the per-worker table '-'), but the CSV a spreadsheet reads did not: `show --table hosts` gave each host's
served_per_worker as '0 0 0' beside its 100 served, `--table workers` a served of 0 per worker, and a ramp's steps
table got_per_s 0.0 beside the 6,380/s its report read (its sum left the unnamed replies out). Now a host's
served_per_worker is blank where none named a worker and its `unnamed` column holds them, the workers' served is
blank, and got_per_s counts what was served. The witness: nginx's access log in the server's namespace, a line per
request it answered.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cluster import Cluster, cluster_fixture
from conftest import run_cli, wait_for
from nginx_by_hand import in_srv
from test_clients_faults import own_config

cluster = cluster_fixture(clients=2)
PORT = 8080
WORKERS = 2


class Page:
    """nginx in srv: its address and access log."""

    def __init__(self, address: str, log: Path) -> None:
        self.address, self.log = address, log

    def answered(self) -> int:
        return len(self.log.read_text().splitlines()) if self.log.exists() else 0


@pytest.fixture
def page(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Page]:
    d = tmp_path_factory.mktemp("nginx")
    with in_srv(cluster, d, reply="hello", logged="$status", port=PORT, workers=WORKERS) as address:
        yield Page(address, d / "access.log")


def _table(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def _logged(page: Page, at_least: int) -> int:
    """The access log's count once it holds `at_least` (nginx writes a line after the reply is sent)."""
    return wait_for(page.answered, lambda n: n >= at_least, 30, "nginx's access log lines")


def test_latency_from_hosts_counts_each_hosts_served_apart(cluster: Cluster, page: Page, tmp_path: Path) -> None:
    path = tmp_path / "latency.json"
    before = page.answered()
    args = ["latency", "--target", page.address, "--protocol", "http", "--clients", "c1,c2", "-n", "100", "-c", "4"]
    result = run_cli([*args, "--ssh-config", own_config(cluster, tmp_path), "--json", str(path)])
    assert result.exit_code == 0, result.output
    assert _logged(page, before + 100) - before == 100
    hosts = _table(run_cli(["show", str(path), "--format", "csv", "--table", "hosts"]).stdout)
    assert sorted(h["host"] for h in hosts) == ["c1", "c2"]
    assert sum(int(h["served"]) for h in hosts) == 100  # each host's own, adding up to nginx's count
    assert all(h["unnamed"] == h["served"] and h["served_per_worker"] == "" for h in hosts), hosts
    workers = _table(run_cli(["show", str(path), "--format", "csv", "--table", "workers"]).stdout)
    assert workers and all(w["served"] == "" for w in workers), workers  # not 0: not known
    assert sum(json.loads(path.read_text())["served"]) == 0  # the file keeps its zeros, as c043737b has it


def test_ramp_from_hosts_gives_what_it_served(cluster: Cluster, page: Page, tmp_path: Path) -> None:
    path = tmp_path / "ramp.json"
    before = page.answered()
    args = ["ramp", "--target", page.address, "--protocol", "http", "--clients", "c1,c2", "--rates", "100"]
    result = run_cli([*args, "--step", "500ms", "--ssh-config", own_config(cluster, tmp_path), "--json", str(path)])
    assert result.exit_code == 0, result.output
    (step,) = json.loads(path.read_text())["steps"]
    assert step["unnamed"] > 0 and not any(step["served"])
    assert _logged(page, before + step["unnamed"]) - before == step["unnamed"]  # nginx answered each, no more
    (row,) = _table(run_cli(["show", str(path), "--format", "csv"]).stdout)
    assert float(row["got_per_s"]) == round(step["unnamed"] / step["wall_s"], 1) > 0, row
    hosts = _table(run_cli(["show", str(path), "--format", "csv", "--table", "hosts"]).stdout)
    assert sum(int(h["unnamed"]) for h in hosts) == step["unnamed"] and not any(h["served_per_worker"] for h in hosts)
