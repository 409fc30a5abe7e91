"""inspect's words for a server that took its listeners out of its epolls (48af9e5) named Apache's MaxRequestWorkers
and nginx's accept mutex; HAProxy does so at its global maxconn: Debian's HAProxy (nbthread 4, maxconn 4) with 4
connections held and 6 more queued (ss -ltn: Recv-Q 5, its backlog 4) read 'no thread waits on a listener at this
moment and none is running: 4 threads holding one wait in an epoll without it', its threads all in epoll_wait, and
observe 'no connection was accepted in 3.0 s, though the listen queue held up to 5'. The sentence names it now."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import wait_for

from accept_order.experiments.inspect.run import inspect
from accept_order.experiments.observe.run import observe
from accept_order.experiments.observe.verdict import headline
from accept_order.probes.listeners import listening_sockets
from accept_order.servers.launched.haproxy import haproxy_missing

TIMEOUT_S = 20.0
THREADS = 2
MAXCONN = 2

pytestmark = pytest.mark.skipif(bool(haproxy_missing()), reason=f"a real HAProxy: {haproxy_missing()}")


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as client:
            client.sendall(b"GET / HTTP/1.0\r\n\r\n")
            return client.recv(64).split(b"\r\n")[0].endswith(b" 200 OK")
    except OSError:
        return False


@pytest.fixture
def haproxy_full(tmp_path: Path, free_port: int) -> Iterator[tuple[int, int]]:
    """(pid, port) of Debian's HAProxy holding MAXCONN idle connections, with two more waiting in its listen queue."""
    port = free_port
    path = tmp_path / "haproxy.cfg"
    path.write_text(
        f"global\n    nbthread {THREADS}\n    maxconn {MAXCONN}\ndefaults\n    mode http\n    timeout client 60s\n"
        f"    timeout http-request 60s\n    timeout server 5s\n    timeout connect 5s\nfrontend f\n"
        f"    bind 127.0.0.1:{port}\n    http-request return status 200 content-type text/plain string ok\n"
    )
    process = subprocess.Popen(["haproxy", "-db", "-f", str(path)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    clients: list[socket.socket] = []
    try:
        wait_for(lambda: process.poll() is None and _answers(port), bool, TIMEOUT_S, "HAProxy's answer")
        clients = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(MAXCONN)]  # held, silent
        for _ in range(2):
            client = socket.socket()
            client.setblocking(False)
            client.connect_ex(("127.0.0.1", port))
            clients.append(client)
        yield process.pid, port
    finally:
        for client in clients:
            client.close()
        process.kill()
        process.wait(10)
        assert process.stderr is not None
        process.stderr.close()


def test_haproxy_at_maxconn_is_named_among_those_that_take_their_listeners_out(haproxy_full: tuple[int, int]) -> None:
    pid, port = haproxy_full
    # the witness: connections the kernel completed wait in the listen queue, HAProxy taking none
    wait_for(lambda: sum(r.queue for r in listening_sockets(port)), lambda n: n >= 1, TIMEOUT_S, "a queued connection")
    seen = wait_for(lambda: inspect(pid=pid, samples=2).mechanism, lambda m: m.name is None, TIMEOUT_S, "the pause")
    said = " ".join(seen.evidence)
    assert f"none is running: {THREADS} threads holding one wait in an epoll without it" in said, said
    assert "HAProxy at its maxconn" in said, said
    assert sum(r.queue for r in listening_sockets(port)) >= 1  # still waiting: nothing was taken meanwhile


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("bpftrace") is None, reason="needs root and bpftrace")
def test_observe_names_a_connection_limit_among_the_causes(haproxy_full: tuple[int, int]) -> None:
    """observe's headline gave 'stopped, or busy with something else' of HAProxy's idle threads at maxconn."""
    pid, port = haproxy_full
    wait_for(lambda: sum(r.queue for r in listening_sockets(port)), lambda n: n >= 1, TIMEOUT_S, "a queued connection")
    made = observe(pid=pid, duration_s=1.0, interval_s=0.25)
    if not made.traced:
        pytest.skip(f"bpftrace did not count here: {made.source}")
    said = headline(made)
    assert said.startswith("no connection was accepted in") and made.queue_max, said
    assert "at a connection limit such as Apache's MaxRequestWorkers or HAProxy's maxconn" in said, said
