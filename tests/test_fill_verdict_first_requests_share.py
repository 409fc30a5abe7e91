"""The fill verdict (experiments/latency/first_requests.py) where a connection carries K requests.

With --requests-per-connection 2, half of all requests are first ones, so a tail of first requests cannot be twice
their share: nginx (4 workers, -c 100, 6,000 requests; load 3, Linux 6.18, 2 vCPUs) read 'The tail is the steady
state, not the fill: 51 of the 60 slowest requests ... were connections' first requests (50.5% of all requests)',
first p99 31.21 ms against 16.65 ms for the later ones. And connections opened throughout the run have no fill:
their first requests' wait to be accepted is the steady state's own.
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
from test_kept_first_requests import _kept, _with_fill

from accept_order.core.first_requests import FirstRequests
from accept_order.core.histogram import LatencyHistogram
from accept_order.experiments.latency.first_requests import fill_verdict, first_parts
from accept_order.experiments.latency.result import LatencyResult

DATA = Path(__file__).parent / "data"


def _sum_of(parts: tuple[LatencyHistogram, ...] | list[LatencyHistogram]) -> LatencyHistogram:
    every = LatencyHistogram()
    for h in parts:
        every.merge(h)
    return every


def _split(per_connection: int, firsts: dict[int, int], later: dict[int, int]) -> LatencyResult:
    """A run of `per_connection` requests a connection whose first requests' durations are `firsts` (µs -> count)
    and its later ones' `later`."""
    every, first = LatencyHistogram(), LatencyHistogram()
    for us, n in firsts.items():
        first.add(us, n)
        every.add(us, n)
    for us, n in later.items():
        every.add(us, n)
    return dataclasses.replace(
        _kept(per_connection, pool=False), histogram=every, first_requests=FirstRequests(first, ())
    )


def test_a_tail_mostly_of_first_requests_at_two_a_connection_is_theirs_not_the_steady_state() -> None:
    # 3,000 connections of 2 requests: 51 of the 60 slowest are first requests, where half of all are
    result = _split(2, {1000: 2949, 9000: 51}, {1000: 2991, 9500: 9})
    said = fill_verdict(result) or ""
    assert not said.startswith("The tail is the steady state"), said
    assert said.startswith(
        "The tail is the connections' first requests, not the later ones: 51 of the 60 slowest requests"
    ), said
    assert "Each connection carried 2 requests, so connections were opened throughout the run" in said, said
    assert "(the 3,000 first requests: p99 9.00 ms" in said and "(beyond chance)" in said, said


def test_first_requests_beyond_their_share_but_under_half_the_tail_are_partly_it() -> None:
    # 10,000 connections of 3 requests: 140 of the 300 slowest are first requests (46.7%), a third of all are
    result = _split(3, {1000: 9860, 9000: 140}, {1000: 19840, 9500: 160})
    said = fill_verdict(result) or ""
    assert said.startswith("The tail is partly the connections' first requests: 140 of the 300 slowest"), said
    assert "1.4 times their share of all requests (33.3%)" in said, said


def test_a_fill_names_the_accept_batch_as_a_thing_to_try_not_as_measured() -> None:
    said = fill_verdict(_with_fill(_kept(0, pool=False), 4_000_000, 25)) or ""
    assert said.startswith("The tail is the fill, not the steady state: 100 of the 100 slowest"), said
    assert "so they could queue on the listener" in said and "may shorten that wait" in said, said
    assert "this run did not measure that" in said and "the same run with --accept-batch 0 tells" in said, said
    assert "queued on the listener" not in said and "shortens that wait" not in said, said


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


def test_a_pool_reopened_where_the_kernel_did_not_count_is_not_said_filled_one_at_a_time() -> None:
    """An attached pool of 100 (no bpftrace: accepts not counted) whose server closed every connection once: 200
    first requests, so the pool did not open them all one after another in its fill."""
    pooled = _with_fill(_kept(0, pool=True), 4_000_000, 50)  # 200 first requests for a pool of 100
    attached = dataclasses.replace(
        pooled,
        server=pooled.server.replace(attach=(1,)),
        evidence={"accept_counts": {"available": False, "why": "bpftrace not found on PATH", "counts": {}}},
    )
    said = fill_verdict(attached) or ""
    assert said.startswith("The tail is the fill"), said
    assert "one after another" not in said, said


def test_the_tail_of_a_short_run_is_said_as_the_share_it_is() -> None:
    """The tail is the slowest 1%, but at least one request: of 40, the one slowest is 2.5% of all, not '1%'."""
    said = fill_verdict(_split(2, {1000: 19, 9000: 1}, {1000: 20})) or ""
    assert "the 1 slowest request (2.5% of all, 9.00 ms and more)" in said, said
    said = fill_verdict(_split(2, {1000: 2949, 9000: 51}, {1000: 2991, 9500: 9})) or ""
    assert "the 60 slowest requests (1% of all, 9.00 ms and more)" in said, said
