"""show --format csv --table connections gives an attached pool's requests per worker only where they are all of them.

'latency --attach <nginx> --port P --protocol http --pool -c 8 --requests-per-connection 0 --duration 3s' at
Debian's nginx with keepalive_requests 100 (4 workers; load 4, Linux 6.18.44, 2 vCPUs): its CSV's 'requests' read
400, 100, 100 and 200, the requests over the pool's first 8 connections (whose holders the client found once the pool
was filled), where nginx's access log gave the workers 18,500, 17,695, 17,600 and 18,541 of 72,336: the report's table
says '800 of the 72,336', a CSV row has nowhere to. Where they are a part the cell is now empty (not known, as
held_at_end is); where the server kept the pool's connections they are all, and the log's."""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from pathlib import Path

import pytest
from conftest import run_cli
from nginx_by_hand import nginx_by_hand, one_server_conf
from test_attach_h2c_port import ATTACH, TIMEOUT_S


def _nginx(limit: int) -> str:
    return one_server_conf("$pid $connection $connection_requests", http=[f"keepalive_requests {limit};"])


@ATTACH
@pytest.mark.parametrize("limit", [20, 1_000_000], ids=["closes-each-after-20", "keeps-them"])
def test_the_csvs_requests_per_worker_are_all_or_none(free_port: int, tmp_path: Path, limit: int) -> None:
    out = tmp_path / "pool.json"
    with nginx_by_hand(_nginx(limit), free_port, 2, TIMEOUT_S) as nginx:
        result = run_cli(
            [
                *("latency", "--attach", str(nginx.master), "--port", str(free_port), "--protocol", "http"),
                *("--pool", "-c", "4", "--requests-per-connection", "0", "-n", "400", "--driver-procs", "1"),
                *("--json", str(out)),
            ]
        )
        logged = [line.split() for line in nginx.access_log.read_text().splitlines()]
    assert result.exit_code == 0, result.output
    shown = run_cli(["show", str(out), "--format", "csv", "--table", "connections"])
    assert shown.exit_code == 0, shown.output
    rows = list(csv.DictReader(io.StringIO(shown.stdout)))
    pids = {c["index"]: c["pid"] for c in json.loads(out.read_text())["counters"]}
    # the witness: each worker's requests, and its connections (a request numbered 1 on its connection)
    requests = Counter(int(pid) for pid, _, _ in logged)
    connections = Counter(int(pid) for pid, _, n in logged if n == "1")
    assert len(rows) == 2 and sum(requests.values()) == 400, (rows, logged)
    for row in rows:
        pid = pids[int(row["worker"])]
        assert int(row["accepted"]) == connections[pid], (row, connections)
        if limit == 20:  # 20 connections or so for a pool of 4: the pool's own requests are a part
            assert row["requests"] == "", (row, requests)
        else:
            assert int(row["requests"]) == requests[pid], (row, requests)
