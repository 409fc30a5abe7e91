"""The replies that said Connection: close are counted on every connection, not on the pool's own alone.

'latency --attach <nginx> --port P --protocol http --pool -c 8 --requests-per-connection 0 --duration 3s' at
Debian's nginx with keepalive_requests 100 (4 workers; load 4, Linux 6.18.44, 2 vCPUs) read '8 replies said
Connection: close (worker 0: 1, worker 1: 5, worker 2: 1, worker 3: 1)' where nginx's access log held 728 hundredth
requests, each answered with Connection: close: the replies name no worker, so the client counts a connection for
the worker it found holding it once the pool was filled, and those opened later in place of closed ones were on no
worker's row, their closes dropped with it. They are now counted apart ('719 replies said Connection: close (worker
0: 4, worker 1: 1, worker 2: 1, worker 3: 2, 711 on connections counted for no worker)', the log 719) and kept in
the file (server_closes.unnamed_told, written only where some were), a merge adding them."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli
from nginx_by_hand import nginx_by_hand, one_server_conf
from test_attach_h2c_port import ATTACH, TIMEOUT_S

from accept_order.core.load_summary import ServerCloses

LIMIT = 20
NGINX = one_server_conf("$pid $connection $connection_requests", http=[f"keepalive_requests {LIMIT};"])


@ATTACH
def test_every_close_an_attached_nginx_told_is_counted(free_port: int, tmp_path: Path) -> None:
    out = tmp_path / "closes.json"
    with nginx_by_hand(NGINX, free_port, 2, TIMEOUT_S) as nginx:
        result = run_cli(
            [
                *("latency", "--attach", str(nginx.master), "--port", str(free_port), "--protocol", "http"),
                *("--pool", "-c", "4", "--requests-per-connection", "0", "-n", "400", "--driver-procs", "1"),
                *("--json", str(out)),
            ]
        )
        logged = [line.split() for line in nginx.access_log.read_text().splitlines()]
    assert result.exit_code == 0, result.output
    # the witness: each connection's LIMIT-th request, which nginx answers with Connection: close
    told = sum(1 for _, _, n in logged if int(n) == LIMIT)
    assert len(logged) == 400 and told > 4, logged
    said = " ".join(result.stdout.split())
    assert f"{told} replies said Connection: close (" in said, (told, said)
    saved = json.loads(out.read_text())
    closes = ServerCloses.from_dict(saved["server_closes"])
    assert closes.all_told == told and closes.unnamed_told == told - sum(closes.told) > 0, saved["server_closes"]
    # the pool's own connections, whose holders the client found, stay on their workers' rows: at most one close each
    assert 0 < sum(closes.told) <= 4, saved["server_closes"]
    assert f"{closes.unnamed_told} on connections counted for no worker)" in said, said
    # a merge of two such files adds them (as served's unnamed: LoadSummary.extend)
    both = ServerCloses.from_dict(saved["server_closes"]).extend(closes)
    assert both.unnamed_told == 2 * closes.unnamed_told and both.all_told == 2 * told
    assert "unnamed_told" not in ServerCloses((0, 0), (1, 2)).to_dict()  # files of every other run as before
