"""latency --target --pool at a plain page (Debian's nginx answering 'ok', naming no worker): no worker's row is
given where nobody counted one.

c043737b counted such replies served and left the kept connections' table out ('per worker not known'), but the
first-requests table still gave each worker a row of zeros (first 0, later 0) under an 'all' row of 4 and 196, and
`show --table connections` each worker 'accepted 0, held_at_end 0, requests 0', `--table first_requests` the same
zeros as counts. Now only the 'all' row, and no per-worker rows. The witness: nginx's access log, a line per request.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from conftest import run_cli, wait_for
from nginx_by_hand import nginx_by_hand, one_server_conf

REQUESTS, POOL = 200, 4


def _table(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_a_pool_at_a_plain_page_gives_no_worker_rows(tmp_path: Path, free_port: int) -> None:
    path = tmp_path / "pool.json"
    with nginx_by_hand(one_server_conf("$status"), free_port, workers=2, timeout=30) as nginx:
        args = ["latency", "--target", f"127.0.0.1:{free_port}", "--protocol", "http", "--pool"]
        args += ["--requests-per-connection", "0", "-c", str(POOL), "-n", str(REQUESTS), "--driver-procs", "1"]
        result = run_cli([*args, "--json", str(path)])
        assert result.exit_code == 0, result.output
        log = nginx.access_log
        logged = wait_for(lambda: log.read_text().splitlines(), lambda lines: len(lines) >= REQUESTS, 30, "the log")
    assert len(logged) == REQUESTS == sum(n for _, n in json.loads(path.read_text())["histogram"]["counts"])
    table = result.stdout.split("first requests and later ones", 1)[1].split("first: ", 1)[0]
    lines = table.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.lstrip().startswith("─"))
    rows = [line.split()[0] for line in lines[rule + 1 :] if line.strip()]
    assert rows == ["all"], table  # no worker's row of zeros
    firsts = _table(run_cli(["show", str(path), "--format", "csv", "--table", "first_requests"]).stdout)
    assert [r["worker"] for r in firsts] == ["all"], firsts
    assert int(firsts[0]["first_requests"]) == POOL and int(firsts[0]["later_requests"]) == REQUESTS - POOL
    connections = _table(run_cli(["show", str(path), "--format", "csv", "--table", "connections"]).stdout)
    assert connections == [], connections  # nobody counted a worker's connections or requests
