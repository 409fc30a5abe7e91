"""Each kept connection's first requests, and the requests per worker of an attached pool, kept with the worker
that served them (loads/kept_owners.py, experiments/latency/kept_report.py, first_requests.py): through a merge
whose rows move, over --clients hosts, and where the replies name no worker and the kernel did not count the
workers' accepts (bpftrace off PATH; a Node cluster's master accepting for its workers). Real servers' own logs
(nginx's $pid and $connection_requests, each Node worker's) are the witnesses.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import OutputReader, run_cli
from test_clients_cli import own_address
from test_clients_kept import spawned  # noqa: F401 - the fixture: popen gateways in place of ssh
from test_kept_first_requests import _kept

from accept_order.core.first_requests import FirstRequests
from accept_order.core.histogram import LatencyHistogram
from accept_order.experiments.latency.first_requests import first_parts

DATA = Path(__file__).parent / "data"


def _sum_of(parts: tuple[LatencyHistogram, ...] | list[LatencyHistogram]) -> LatencyHistogram:
    every = LatencyHistogram()
    for h in parts:
        every.merge(h)
    return every


def test_an_attached_pools_worker_rows_say_they_hold_its_placed_connections_alone() -> None:
    """Replies that name no worker: a worker's row holds the pool's connections whose holder was found after the
    fill. An attached nginx (keepalive_requests 50, --pool -c 40, 4,000 requests) closed and the client reopened 60:
    rows of 40 first requests under an 'all' of 100, which read as every request per worker."""
    pool = _kept(0, pool=True)
    placed = []
    for _ in pool.worker_histograms:
        h = LatencyHistogram()
        h.add(1000, 10)
        placed.append(h)
    every = LatencyHistogram()
    every.add(1000, 100)  # the 40 placed, and 60 of connections opened in place of closed ones, counted for none
    histogram = _sum_of(pool.worker_histograms)
    histogram.add(1000, 60 + 1000)  # the reopened connections' first requests, and 1,000 later ones over them
    attached = dataclasses.replace(
        pool, evidence={"accept_counts": {}}, histogram=histogram, first_requests=FirstRequests(every, tuple(placed))
    )
    said = [str(part) for part in first_parts(attached)]
    assert said[-1].startswith("the workers' rows: 40 of the 100 first requests and 9,960 of the 10,960 later"), said
    assert "connections opened later in place of closed ones are in 'all' alone" in said[-1], said
    # every connection placed, none reopened: the rows are every request, nothing to say
    whole = dataclasses.replace(
        attached,
        histogram=_sum_of(pool.worker_histograms),
        first_requests=FirstRequests(_sum_of(placed), tuple(placed)),
    )
    assert [str(part) for part in first_parts(whole)][-1].startswith("first: each connection's first request"), whole


def _with_firsts(document: dict[str, Any]) -> dict[str, Any]:
    """`document` (a kept run from before first requests were kept apart) with each worker's slowest request taken
    as its first one: a part of its histogram, as the file's check holds."""
    workers = [{"unit": h["unit"], "counts": [max(h["counts"])[:1] + [1]]} for h in document["worker_histograms"]]
    every: dict[int, int] = {}
    for h in workers:
        for us, n in h["counts"]:
            every[us] = every.get(us, 0) + n
    unit = document["histogram"]["unit"]
    return document | {
        "first_requests": {"every": {"unit": unit, "counts": sorted(map(list, every.items()))}, "workers": workers}
    }


def test_a_merge_keeps_each_workers_first_requests_with_its_pid(tmp_path: Path) -> None:
    """Two real kept runs (tests/data/merge_target_closes_*.json): the first heard from pids 111 and 222, the second
    from 222 and 333, so the second's rows move in the merge (222: row 0 -> 1, 333: row 2); its first requests must
    move with them, or 222's are counted for 111."""
    paths = []
    want: Counter[tuple[int, int]] = Counter()  # (pid, µs) -> first requests
    for name in ("a", "b"):
        document = _with_firsts(json.loads((DATA / f"merge_target_closes_{name}.json").read_text()))
        pid_of = {c["index"]: c["pid"] for c in document["counters"]}
        for index, h in enumerate(document["first_requests"]["workers"]):
            want.update({(pid_of[index], us): n for us, n in h["counts"]})
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(document))
    out = tmp_path / "merged.json"
    merged = run_cli(["merge", *map(str, paths), "--json", str(out)])
    assert merged.exit_code == 0, merged.output
    document = json.loads(out.read_text())
    pid_of = {c["index"]: c["pid"] for c in document["counters"]}
    got: Counter[tuple[int, int]] = Counter()
    for index, h in enumerate(document["first_requests"]["workers"]):
        got.update({(pid_of[index], us): n for us, n in h["counts"]})
    assert got == want, (got, want)


@pytest.mark.usefixtures("spawned")
def test_client_hosts_first_requests_are_every_hosts_together(tmp_path: Path) -> None:
    """--clients: each host's first requests are added (loads/hosts/split.py), one per connection a worker's first
    reply named (execnet popen gateways stand in for ssh, as tests/test_clients_kept.py does)."""
    address = own_address()
    if address is None:
        pytest.skip("no address but loopback here")
    out = tmp_path / "kept.json"
    args = ["latency", "--clients", "c1,c2", "--host", address, "-w", "2", "-c", "4"]
    result = run_cli([*args, "--requests-per-connection", "25", "-n", "400", "--json", str(out)])
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text())
    firsts = document["first_requests"]
    assert [LatencyHistogram.from_dict(h).count for h in firsts["workers"]] == document["connections"], firsts
    assert LatencyHistogram.from_dict(firsts["every"]).count == sum(document["connections"]) == 16, document


NO_BPFTRACE = DATA / "attached_nginx_pool_no_bpftrace.json"


def test_an_attached_pool_without_the_kernels_accepts_shows_the_holders_found() -> None:
    """A real 'latency --attach NGINX --protocol http --pool -c 40 --requests-per-connection 0 -n 4000' with bpftrace
    off PATH (as a user has it): nginx's log ($pid, $connection_requests 1) gave its 4 workers 17/1/17/5 connections
    and 1678/138/1642/542 requests. The client found those holders after the fill and counted the requests, but the
    table read '-' for accepted and its line 'accepted: requests, p50, p99: ...', the accepted words lost."""
    shown = run_cli(["show", str(NO_BPFTRACE)])
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.split("kept connections per worker")[1].splitlines()
    rows = [line.split() for line in lines if line.split()[:1] in (["0"], ["1"], ["2"], ["3"])][:4]
    assert [(row[1], row[4]) for row in rows] == [("17", "1678"), ("1", "138"), ("17", "1642"), ("5", "542")], rows
    said = " ".join(shown.stdout.split())
    assert "accepted: the pool's connections the client found the worker holding once it was filled" in said, said
    assert "accepted: requests, p50" not in said, said
    csv_rows = run_cli(["show", str(NO_BPFTRACE), "--format", "csv", "--table", "connections"]).stdout.splitlines()
    assert [row.split(",")[2] for row in csv_rows[1:]] == ["17", "1", "17", "5"], csv_rows


NODE = shutil.which("node") or shutil.which("nodejs")
NODE_CLUSTER = """
const cluster = require('cluster'), http = require('http'), fs = require('fs');
if (cluster.isPrimary) { for (let i = 0; i < 2; i++) cluster.fork(); }
else {
  const log = fs.openSync(process.argv[2] + '/' + process.pid + '.log', 'a');
  let connections = 0;
  const server = http.createServer((req, res) => {
    const s = req.socket;
    if (!s.number) { s.number = ++connections; s.requests = 0; }
    fs.writeSync(log, `${s.number} ${++s.requests}\\n`);  // before the reply: complete once the client has it
    res.end('hello\\n');
  });
  server.listen(0, '127.0.0.1', () => console.log('listening ' + server.address().port));
}
"""


def test_an_attached_node_clusters_pool_is_counted_for_the_workers_its_master_handed_it_to(tmp_path: Path) -> None:
    """Debian's node, cluster of 2 (its master accepts every connection and hands it to a worker: the kernel counts
    no worker's accepts): each worker's own log of its connections and requests is the witness that the holders
    the client found after the fill are the workers serving them."""
    if NODE is None:
        pytest.skip("needs Debian's nodejs")
    script = tmp_path / "cluster.js"
    script.write_text(NODE_CLUSTER)
    proc = subprocess.Popen(
        [NODE, str(script), str(tmp_path)], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert proc.stdout is not None
        log = OutputReader(proc.stdout)
        port = log.wait_for(r"(?s)listening (\d+).*listening \1", 30.0).group(1)
        out = tmp_path / "pool.json"
        result = run_cli(
            [
                *("latency", "--attach", str(proc.pid), "--port", port, "--protocol", "http", "--pool", "-c", "8"),
                *("--requests-per-connection", "0", "-n", "800", "--json", str(out)),
            ]
        )
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the master and its workers
        proc.wait(30.0)
    assert result.exit_code == 0, result.output
    document = json.loads(out.read_text())
    pids = [c["pid"] for c in sorted(document["counters"], key=lambda c: c["index"])]
    logged = [[line.split() for line in (tmp_path / f"{pid}.log").read_text().splitlines()] for pid in pids]
    assert sum(map(len, logged)) == 800, logged
    assert document["connections"] == [sum(1 for _, k in rows if k == "1") for rows in logged], document
    placed = [LatencyHistogram.from_dict(h).count for h in document["worker_histograms"]]
    assert placed == [len(rows) for rows in logged], (placed, logged)
    said = " ".join(result.stdout.split())
    assert "accepted: the pool's connections the client found the worker holding once it was filled" in said, said
    lines = result.stdout.split("kept connections per worker")[1].splitlines()
    rows = [line.split() for line in lines if line.split()[:1] in (["0"], ["1"])][:2]
    assert [int(row[1]) for row in rows] == document["connections"], rows
