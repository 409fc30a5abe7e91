"""observe --no-trace's look at who holds which connection saw none of a gunicorn gthread's connections (the
doubt 6e70f5e raised: [0, 0] in 4 runs of 400 connections). The look listed the namespace's connections from
/proc/PID/net/tcp, which lists every socket of the namespace, then read the workers' fd tables: beside 7,500 other
sockets (TIME_WAITs of other jobs on this machine) the listing took ~100 ms, longer than a 20-request connection
lives, so every connection it listed was closed by the time the fd tables were read. It now asks the kernel over
netlink for the server's ports alone (a few ms), as the load's look does.

PyPI's gunicorn with 2 gthread workers serves four clients' connections of 20 requests each while the test's own
process holds 3,000 listening sockets on other ports (the busy namespace, made here so that the test does not depend
on what else runs). The witness: the clients' count of the connections they made, which the looks may not pass."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from gunicorn_gthread import gunicorn_gthread, kept_connection  # noqa: F401 - the fixture

from accept_order.experiments.observe.sampling import Holdings
from accept_order.experiments.observe.server import find_server

CLIENTS = 4
LOOKS = 30
OTHERS = 3000  # listening sockets elsewhere in the namespace: every one is a line of /proc/net/tcp
TIMEOUT_S = 120.0


@pytest.fixture
def crowded_namespace() -> Iterator[None]:
    held: list[socket.socket] = []
    try:
        for _ in range(OTHERS):
            sock = socket.socket()
            held.append(sock)
            sock.bind(("127.0.0.1", 0))
            sock.listen(1)
        yield
    finally:
        for sock in held:
            sock.close()


def test_untraced_looks_see_connections_shorter_than_a_listing_of_the_namespace(
    gunicorn_gthread: tuple[int, list[int]],  # noqa: F811 - the fixture imported above
    crowded_namespace: None,
) -> None:
    port, _ = gunicorn_gthread
    holdings = Holdings(find_server(port=port))
    stop, made = threading.Event(), [0] * CLIENTS

    def client(index: int) -> None:
        while not stop.is_set():
            kept_connection(port)
            made[index] += 1

    clients = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(CLIENTS)]
    for thread in clients:
        thread.start()
    try:
        for _ in range(LOOKS):
            holdings.sample()
    finally:
        stop.set()
        for thread in clients:
            thread.join(TIMEOUT_S)
    assert not any(thread.is_alive() for thread in clients), "a client did not finish"
    seen = list(holdings.seen.values())
    assert sum(seen) > 0, (seen, made)  # 30 looks with four connections open nearly all the time
    assert sum(seen) <= sum(made), (seen, made)
