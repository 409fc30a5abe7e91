"""Review RC of 12b4e9a: a running process holding only blocking listeners was read as an accept() waiter
wherever it was. A process alone on its listener may wait for readiness on a blocking socket (no other takes
its connection first): Python's http.server under load read 'blocking: 1 worker is running at the look ...
accept() next' where it sleeps in poll() between requests (12b4e9a's parent read 'no thread waits'). A forking
server's children hold the listener their parent polls and never accept from it (socketserver's ForkingMixIn
read 'blocking'), and Apache prefork's parent, running at a look, counted as one more worker. Kept: Apache
prefork's children, siblings on one blocking listener that nobody polls (test_prefork_busy_reading.py)."""

from __future__ import annotations

import socket
import subprocess
import sys

from conftest import wait_for

from accept_order.analysis.mechanism import classify
from accept_order.analysis.mechanism_values import Listener, Seen
from accept_order.experiments.inspect.run import inspect
from accept_order.experiments.inspect.sample import _accepting_peers
from accept_order.probes.proc_waits import thread_wait

LISTENER = frozenset({4242})
PARENT = {100: 1, 101: 100, 102: 100}  # the master 100 and its children 101, 102


def running(pid: int) -> Seen:
    """What resolve makes of a running process whose listeners are all blocking."""
    return Seen(pid, pid, "running", "accept", listeners=LISTENER, holds=LISTENER)


def read_as(seen: list[Seen]) -> list[str]:
    return [s.via for s in _accepting_peers(seen, PARENT)]


def test_running_siblings_on_a_blocking_listener_nobody_polls_are_accept_waiters() -> None:
    parent_asleep = Seen(100, 100, "select", "other", holds=LISTENER)  # prefork's parent: select() on no descriptor
    assert read_as([parent_asleep, running(101), running(102)]) == ["other", "accept", "accept"]


def test_running_children_whose_parent_polls_the_listener_are_not_waiters() -> None:
    polling = Seen(100, 100, "poll", "poll", listeners=LISTENER, holds=LISTENER)
    assert read_as([polling, running(101), running(102)]) == ["poll", "running", "running"]
    assert _accepting_peers([polling, running(101)], PARENT)[1].listeners == frozenset()


def test_a_process_alone_on_its_blocking_listener_is_not_taken_for_an_accept_waiter() -> None:
    assert read_as([running(101)]) == ["running"]
    # the master running at the look (prefork's maintenance) while its children sleep in accept()
    asleep = [Seen(pid, pid, "accept", "accept", listeners=LISTENER, holds=LISTENER) for pid in (101, 102)]
    assert read_as([running(100), *asleep]) == ["running", "accept", "accept"]
    assert [s.via for s in _accepting_peers([running(101)], {})] == ["running"]  # no parent known: alone


SERVER = """
import http.server, sys, time
class Spin(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        end = time.monotonic() + 60
        while time.monotonic() < end:
            pass
server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Spin)  # a blocking listener, watched by poll()
print("ready", flush=True)
server.serve_forever()
"""


def test_python_http_server_busy_in_a_request_is_not_read_as_blocking(free_port: int) -> None:
    port = free_port
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(port)], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None and server.stdout.readline() == "ready\n"
        with socket.create_connection(("127.0.0.1", port), timeout=30) as client:
            client.sendall(b"GET / HTTP/1.0\r\n\r\n")
            wait_for(lambda: thread_wait(server.pid, server.pid).call, lambda c: c == "running", 10, "the handler")
            result = inspect(port=port)
    finally:
        server.kill()
        server.wait()
    assert result.mechanism.name is None, result.mechanism


def test_a_thread_beside_a_busy_acceptor_in_an_epoll_without_the_listener_is_no_lock_loser() -> None:
    """Puma under load: worker 200's reactor thread (201) waits in an epoll without the listener while its thread
    that accepts is busy; worker 300's waits in ppoll() on the listener. No lock: 1 look in 4 read accept-mutex."""
    listener = [Listener(4242, "127.0.0.1", 80)]
    parent = {200: 100, 300: 100}
    polling = Seen(300, 302, "ppoll", "poll", listeners=LISTENER, holds=LISTENER)
    reactor = Seen(200, 201, "epoll_wait", "idle", holds=LISTENER)
    assert classify([polling, reactor], listener, parent, {}).mechanism == "poll"
    # nginx's accept_mutex: the loser's event loop is its main thread
    nginx = [Seen(300, 300, "epoll_wait", "epoll", listeners=LISTENER, holds=LISTENER, epoll_id="300:8")]
    loser = Seen(200, 200, "epoll_wait", "idle", holds=LISTENER)
    assert classify([*nginx, loser], listener, parent, {}).mechanism == "accept-mutex"
