"""observe explains an HTTP/2 server (issue 28 §2): many requests share one connection, so the load each
worker carries is the connections it holds, not its accepts.

A hand-started Debian nginx (4 workers, `listen ... http2`: cleartext with prior knowledge, as h2load speaks
to an http:// URL; a log of `$pid $connection $connection_requests $remote_port $server_protocol`), driven
by `h2load -c 4 -m 10 -n N` while observe runs. Witnesses: nginx's own log (requests and distinct
connections per worker; h2load splits N evenly over its clients) and the bytes the test's relay forwarded
on each connection (nginx logs the relay's port, which names the connection).

Why a relay: observe counts what a connection carried up to its last sample (load.py), and h2load closes
its connections the moment its last answer is in; samples come as far apart as their cost allows (1.1 s
here with a busy machine's kernel tables), so the tail of each connection would be missed by a different
amount. The relay (a thread of the test) copies bytes both ways unchanged and keeps nginx's side of each
connection open after h2load closes its own, until observe has looked once more: every byte is seen.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import socket
import subprocess
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import wait_for
from nginx_by_hand import established_held, nginx_by_hand
from test_observe_load import Looks

from accept_order.api import observe
from accept_order.experiments.observe.result import ObserveResult
from accept_order.experiments.observe.verdict import verdict

TIMEOUT_S = 60.0
CLIENTS = 4
WORKERS = 4
REQUESTS = 20_000  # across the clients: 5,000 streams on each connection
H2_CONF = """daemon off;
master_process on;
worker_processes {workers};
pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 256; }}
http {{
    log_format load '$pid $connection $connection_requests $remote_port $server_protocol';
    access_log {d}/access.log load;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d};
    uwsgi_temp_path {d}; scgi_temp_path {d};
    server {{ listen 127.0.0.1:{port} http2; location / {{ return 200 "$pid\\n"; }} }}
}}
"""


@pytest.fixture
def h2_nginx(free_port: int) -> Iterator[tuple[int, list[int], Path]]:
    """(port, worker pids, access log) of nginx started by hand from H2_CONF, in its own session."""
    if shutil.which("h2load") is None:
        pytest.skip("h2load is not installed (Debian: apt-get install nghttp2-client)")
    with nginx_by_hand(H2_CONF, free_port, WORKERS, TIMEOUT_S, "accept-order-test-h2-") as nginx:
        yield nginx.port, nginx.workers, nginx.access_log


@dataclass
class Pair:
    """One relayed connection: h2load's side, nginx's side, and the bytes sent to nginx on it."""

    client: socket.socket
    server: socket.socket
    sent: int = 0  # bytes written to nginx on it
    port: int = field(init=False)  # nginx's $remote_port for it

    def __post_init__(self) -> None:
        self.port = int(self.server.getsockname()[1])

    client_closed: bool = False


@dataclass
class HoldingRelay:
    """Copies h2load's connections to nginx byte for byte; nginx's side of each stays open after h2load
    closes its own, until close()."""

    upstream: int
    listener: socket.socket = field(init=False)
    pairs: list[Pair] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._run)
        self.thread.start()

    @property
    def port(self) -> int:
        return int(self.listener.getsockname()[1])

    def closed_by_client(self) -> int:
        with self.lock:
            return sum(p.client_closed for p in self.pairs)

    def _run(self) -> None:
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(self.listener, selectors.EVENT_READ, None)
                while not self.stopping.is_set():
                    for key, _ in selector.select(0.05):
                        self._step(selector, key)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(exc)

    def _step(self, selector: selectors.BaseSelector, key: selectors.SelectorKey) -> None:
        if key.data is None:
            client, _ = self.listener.accept()
            pair = Pair(client, socket.create_connection(("127.0.0.1", self.upstream), timeout=TIMEOUT_S))
            with self.lock:
                self.pairs.append(pair)
            selector.register(client, selectors.EVENT_READ, (pair, True))
            selector.register(pair.server, selectors.EVENT_READ, (pair, False))
            return
        pair, from_client = key.data
        try:
            data = key.fileobj.recv(65536)  # type: ignore[union-attr]
        except ConnectionResetError:
            data = b""
        if from_client and not data:  # h2load is done with it: nginx's side stays open
            selector.unregister(pair.client)
            with self.lock:
                pair.client_closed = True
        elif from_client:
            pair.server.sendall(data)
            with self.lock:
                pair.sent += len(data)
        elif not data:
            selector.unregister(pair.server)
        elif not pair.client_closed:
            with contextlib.suppress(OSError):  # h2load closed its side first: what nginx sends now is nobody's
                pair.client.sendall(data)

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(TIMEOUT_S)
        for pair in self.pairs:
            pair.client.close()
            pair.server.close()
        self.listener.close()


@dataclass(frozen=True)
class Logged:
    """nginx's log read back: per worker pid the requests, the distinct connections and the ports they came
    from; the protocols it names."""

    requests: Counter[int]
    connections: Counter[int]
    ports: dict[int, set[int]]
    protocols: set[str]


def read_log(log: Path) -> Logged:
    lines = [line.split() for line in log.read_text().splitlines() if line.strip()]
    requests = Counter(int(pid) for pid, *_ in lines)
    connections = Counter(int(pid) for pid, _ in {(pid, number) for pid, number, *_ in lines})
    ports: dict[int, set[int]] = {}
    for pid, _, _, port, _ in lines:
        ports.setdefault(int(pid), set()).add(int(port))
    return Logged(requests, connections, ports, {protocol for *_, protocol in lines})


@pytest.mark.parametrize("trace", [True, False], ids=["traced", "untraced"])
def test_http2_byte_shares_are_nginxs_request_shares(h2_nginx: tuple[int, list[int], Path], trace: bool) -> None:
    if trace and (os.geteuid() != 0 or shutil.which("bpftrace") is None):
        pytest.skip("counting accepts needs root and bpftrace")
    port, pids, log = h2_nginx
    relay = HoldingRelay(port)
    until, looks = threading.Event(), Looks()
    said: list[str] = []
    held_by_proc: dict[int, int] = {}
    errors: list[BaseException] = []

    def client() -> None:
        try:
            url = f"http://127.0.0.1:{relay.port}/"
            command = ["h2load", "-c", str(CLIENTS), "-m", "10", "-n", str(REQUESTS), url]
            done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
            said.append(done.stdout)
            assert done.returncode == 0, done.stdout + done.stderr
            wait_for(relay.closed_by_client, lambda n: n == CLIENTS, TIMEOUT_S, "h2load closing its connections")
            looks.one_after_now()  # every byte nginx received is in a sample now
            held_by_proc.update(established_held(port, pids))
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            errors.append(exc)
        finally:
            until.set()

    driver = threading.Thread(target=client)

    def snapshot(result: ObserveResult) -> None:
        looks.snapshot(result)
        if not driver.is_alive() and not until.is_set():
            driver.start()  # once observe watches: every connection is new to it

    try:
        result = observe(
            port=port, duration_s=TIMEOUT_S * 2, interval_s=0.3, trace=trace, on_snapshot=snapshot, until=until
        )
    finally:
        if driver.is_alive() or until.is_set():
            driver.join(TIMEOUT_S + 10)
        relay.close()
    assert not errors and not relay.errors, (errors, relay.errors, said)
    assert f"{REQUESTS} succeeded" in said[0], said[0]
    logged = read_log(log)
    assert logged.protocols == {"HTTP/2.0"} and sum(logged.requests.values()) == REQUESTS
    assert sum(logged.connections.values()) == CLIENTS
    by_pid = {w.pid: w for w in result.workers}
    assert sorted(by_pid) == pids
    # the check: each worker's share of the bytes is its share of the requests in nginx's log
    total_in = sum(w.bytes_in or 0 for w in result.workers)
    for pid in pids:
        assert abs((by_pid[pid].bytes_in or 0) / total_in - logged.requests[pid] / REQUESTS) <= 0.02, pid
    # ... and exactly what the relay sent on the connections nginx says that worker served
    sent = {pair.port: pair.sent for pair in relay.pairs}
    assert {pid: by_pid[pid].bytes_in for pid in pids} == {
        pid: sum(sent[p] for p in logged.ports.get(pid, ())) for pid in pids
    }
    # the connections each worker holds and held: the log's distinct connections (all still open: the relay)
    connections = {pid: logged.connections[pid] for pid in pids}
    assert {pid: by_pid[pid].connections_observed for pid in pids} == connections
    assert {pid: by_pid[pid].connections_held for pid in pids} == connections == held_by_proc
    assert {pid: by_pid[pid].connections_held_peak for pid in pids} == connections
    assert result.accepted_seen == CLIENTS
    if trace:
        assert {pid: by_pid[pid].accepts for pid in pids} == connections
    lines = verdict(result)
    assert any("per data segment received" in line for line in lines), lines  # not per connection: streams
    assert any(line.startswith(f"the load shares rest on {CLIENTS} connections") for line in lines), lines
