"""A server's log that numbers no request names each connection by its client port, and loopback gives a port
in TIME_WAIT to a new connection at once (net.ipv4.tcp_tw_reuse 2): one port can carry two connections of a
run. With K requests a connection, a port's rows are one connection per K (a busy run saw uvicorn's log count
one connection too few, and the load's agreement with it fail)."""

from __future__ import annotations

from accept_order.analysis.witness import agreement, logged

PIDS = [100, 200]
# worker 1's port 40002 carried two connections of 5 requests, one after the other
ROWS = [[100, 40001]] * 5 + [[200, 40002]] * 5 + [[200, 40003]] * 5 + [[200, 40002]] * 5
WITNESS = {"source": "uvicorn's access log", "requests": ROWS}


def test_each_k_rows_of_a_port_are_a_connection() -> None:
    found = logged(WITNESS, PIDS, per_connection=5)
    assert found is not None and found.requests == (5, 15) and found.connections == (1, 3)
    same = agreement(WITNESS, PIDS, [5, 15], [1, 3], per_connection=5)
    assert same is not None and same.connections_agree


def test_a_short_last_connection_is_one_too() -> None:
    found = logged({"requests": [[100, 1]] * 7}, PIDS, per_connection=5)  # 5, then 2 when the count ran out
    assert found is not None and found.connections == (2, 0)


def test_connections_kept_for_the_whole_run_are_one_a_port() -> None:
    found = logged(WITNESS, PIDS)
    assert found is not None and found.connections == (1, 2)
