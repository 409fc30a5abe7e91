"""An attached server that keeps no connection open is said to, from the client's own count of connections answered.

'latency --attach <nginx> --port P --protocol http --pool -c 4 --requests-per-connection 0 -n 400' at Debian's nginx
with keepalive_requests 1 (2 workers; load 2-5, Linux 6.18.44, 2 vCPUs) read '400 replies said Connection: close (400
on connections counted for no worker)', its access log 400 connections of one request each, and never 'this server
does not keep connections open', which a launched server's run says (test_never_kept): the replies name no worker,
so the rows that line was weighed on hold the kernel's accepts or the pool's holders, not the connections answered
(df41da92 counted the closes on no worker's row, but the line still read the rows). A server that keeps them (nginx's
keepalive_requests 20: a connection closed after 20) is not said to keep none."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_cli
from nginx_by_hand import nginx_by_hand, one_server_conf
from test_attach_h2c_port import ATTACH, TIMEOUT_S

SAID = "this server does not keep connections open: it ended every connection it answered after its first reply"


@ATTACH
@pytest.mark.parametrize("limit", [1, 20], ids=["one-a-connection", "twenty-a-connection"])
def test_an_attached_server_keeping_none_is_said_to(free_port: int, tmp_path: Path, limit: int) -> None:
    conf = one_server_conf("$pid $connection $connection_requests", http=[f"keepalive_requests {limit};"])
    with nginx_by_hand(conf, free_port, 2, TIMEOUT_S) as nginx:
        result = run_cli(
            [
                *("latency", "--attach", str(nginx.master), "--port", str(free_port), "--protocol", "http"),
                *("--pool", "-c", "4", "--requests-per-connection", "0", "-n", "400", "--driver-procs", "1"),
                *("--json", str(tmp_path / "pool.json")),
            ]
        )
        logged = [line.split() for line in nginx.access_log.read_text().splitlines()]
    assert result.exit_code == 0, result.output
    said = " ".join(result.stdout.split())
    # the witness: the connections nginx served (a request numbered 1 on its connection) and the most on any
    connections = sum(1 for _, _, n in logged if n == "1")
    most = max(int(n) for _, _, n in logged)
    assert len(logged) == 400 and most == limit, (len(logged), most)
    if limit == 1:
        assert f"{SAID} ({connections} connections, none carried a second request)" in said, (connections, said)
    else:
        assert SAID not in said and connections < 400, (connections, said)
