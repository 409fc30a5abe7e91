"""show --format csv --table connections of an attached pool without bpftrace: the holders found, and their
connections' p50 and p99, only where the pool's connections carried every request.

'latency --attach <nginx> --port P --protocol http --pool -c 4 --requests-per-connection 0 -n 400' at Debian's nginx
with keepalive_requests 20 (2 workers), bpftrace not on PATH (as for a user without it; load 2-4, Linux 6.18.44, 2
vCPUs): the CSV's 'accepted' read 1 and 3, the pool's connections the client found each worker holding once it was
filled, where nginx's access log counted 12 and 10 connections (each one's first request), and its p50 and p99 were
those 4 connections' 80 requests of the 400. fc1404d3 left that row's 'requests' empty for being a part; its
'accepted', p50 and p99 are the same part, which the report's line says and a CSV row has nowhere to. Where nginx
kept the pool's connections (keepalive_requests 1000000) they are the log's: 3 and 1 connections, 296 and 104
requests."""

from __future__ import annotations

import csv
import io
import json
import os
from collections import Counter
from pathlib import Path

import pytest
from conftest import run_cli
from nginx_by_hand import nginx_by_hand, one_server_conf
from test_attach_h2c_port import ATTACH, TIMEOUT_S


def _path_without_bpftrace(directory: Path) -> str:
    """A PATH of every command on this one but bpftrace (links in `directory`): the run's kernel count unavailable."""
    directory.mkdir()
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        for exe in Path(entry).iterdir() if Path(entry).is_dir() else ():
            link = directory / exe.name
            if exe.name != "bpftrace" and not link.exists() and not link.is_symlink():
                link.symlink_to(exe)
    return str(directory)


@ATTACH
@pytest.mark.parametrize("limit", [20, 1_000_000], ids=["closes-each-after-20", "keeps-them"])
def test_the_holders_found_are_given_only_where_they_are_all(free_port: int, tmp_path: Path, limit: int) -> None:
    out = tmp_path / "pool.json"
    conf = one_server_conf("$pid $connection $connection_requests", http=[f"keepalive_requests {limit};"])
    path = _path_without_bpftrace(tmp_path / "bin")
    with nginx_by_hand(conf, free_port, 2, TIMEOUT_S) as nginx:
        result = run_cli(
            [
                *("latency", "--attach", str(nginx.master), "--port", str(free_port), "--protocol", "http"),
                *("--pool", "-c", "4", "--requests-per-connection", "0", "-n", "400", "--driver-procs", "1"),
                *("--json", str(out)),
            ],
            extra_env={"PATH": path},
        )
        logged = [line.split() for line in nginx.access_log.read_text().splitlines()]
    assert result.exit_code == 0, result.output
    saved = json.loads(out.read_text())
    assert saved["evidence"]["accept_counts"]["available"] is False, saved["evidence"]["accept_counts"]
    assert "the pool's connections the client found the worker holding once it was filled" in result.stdout
    shown = run_cli(["show", str(out), "--format", "csv", "--table", "connections"])
    assert shown.exit_code == 0, shown.output
    rows = list(csv.DictReader(io.StringIO(shown.stdout)))
    pids = {c["index"]: c["pid"] for c in saved["counters"]}
    # the witness: each worker's requests, and its connections (a request numbered 1 on its connection)
    requests = Counter(int(pid) for pid, _, _ in logged)
    connections = Counter(int(pid) for pid, _, n in logged if n == "1")
    assert len(rows) == 2 and sum(requests.values()) == 400, (rows, logged)
    if limit == 20:  # 400 requests 20 a connection: some 20 connections, the pool's 4 among them
        assert sum(connections.values()) > 4, connections
        assert all(row[k] == "" for row in rows for k in ("accepted", "requests", "p50_ms", "p99_ms")), rows
        return
    for row in rows:
        pid = pids[int(row["worker"])]
        assert int(row["accepted"]) == connections[pid], (row, connections)
        assert int(row["requests"]) == requests[pid], (row, requests)
        if requests[pid]:  # its connections' latencies, which are all of its requests'
            assert float(row["p99_ms"]) >= float(row["p50_ms"]) > 0, row
        else:
            assert row["p50_ms"] == row["p99_ms"] == "", row
