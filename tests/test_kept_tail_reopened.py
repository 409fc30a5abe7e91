"""A pool kept for the whole run whose workers accepted more connections than it opened says why it has no split.

'latency --attach <nginx> --port P --protocol http --pool -c 32 --requests-per-connection 0 --duration 3s' at an
nginx with its default keepalive_requests (1000): nginx closed each connection after its 1000th request and the
client opened another; the kernel counted 64 accepts (its access log: 64 connections) for a pool of 32, the report
said nothing of it (replies that name no worker leave the server's closes uncounted) and gave no verdict.
"""

from __future__ import annotations

import dataclasses

from conftest import run_cli
from nginx_by_hand import nginx_by_hand, one_server_conf
from test_attach_h2c_port import ATTACH, TIMEOUT_S
from test_small_sentences_held_nothing import pool_run

from accept_order.experiments.latency.kept_tail import kept_tail_verdict

NGINX = one_server_conf("$pid $connection $connection_requests", http=["keepalive_requests 20;"])


def test_a_pool_whose_workers_accepted_more_says_why_no_split() -> None:
    kernel = pool_run("attached", (18, 17, 8, 21), 3000)
    kernel_counts = {"accept_counts": {"available": True}}  # the kernel's accepts in served, as an attached run has
    counted = dataclasses.replace(kernel, served=(18, 17, 8, 21), pool=(32, 32), connections=(), evidence=kernel_counts)
    said = kept_tail_verdict(counted)
    assert said is not None and said.startswith(
        "No verdict on the pool's split: its workers accepted 64 connections for a pool of 32, so 32 were opened in "
        "place of connections that ended before the load did"
    ), said
    assert kept_tail_verdict(pool_run("epoll", (17, 13, 1, 1), 3000, per_connection=100)) is None  # not kept: none


@ATTACH
def test_latency_attached_to_nginx_closing_its_kept_connections(free_port: int) -> None:
    with nginx_by_hand(NGINX, free_port, 2, TIMEOUT_S) as nginx:
        result = run_cli(
            [
                *("latency", "--attach", str(nginx.master), "--port", str(free_port), "--protocol", "http"),
                *("--pool", "-c", "4", "--requests-per-connection", "0", "-n", "400", "--driver-procs", "1"),
            ]
        )
        logged = [line.split() for line in nginx.access_log.read_text().splitlines()]
    assert result.exit_code == 0, result.output
    # the witness: nginx's own connections, each its pid and $connection, and the 20 requests it closed each after
    connections = {(pid, number) for pid, number, _ in logged}
    assert len(logged) == 400 and max(int(n) for _, _, n in logged) == 20, logged
    said = " ".join(result.stdout.split())
    assert (
        f"No verdict on the pool's split: its workers accepted {len(connections)} connections for a pool of 4, so "
        f"{len(connections) - 4} were opened in place of connections that ended before the load did"
    ) in said, said
