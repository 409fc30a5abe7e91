"""observe --port A counts the connections to port A alone where the workers listen on other ports too.

The kernel counts every accept a worker makes; HAProxy with two frontends (ports A and B, the same threads) read 'the
2 threads shared 15 connections' for --port A when all 15 went to B. Each accept is now kept by the descriptor it was
asked of, and a descriptor that is a listener on another port is left out (probes/accept_ports.py).

The witnesses are the servers' own logs, one line per request, naming the port's frontend (HAProxy) or written to the
port's own access log (nginx's server blocks); each request is on a connection of its own, all made inside the window
(after observe's first snapshot, before it is told to end)."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from cluster import dies_with
from haproxy_by_hand import START_TIMEOUT_S, haproxy, pid_answering
from nginx_by_hand import nginx_by_hand
from observed_under import observed_under

from accept_order.experiments.observe.verdict import verdict
from accept_order.servers.launched.base import free_port

CAP_S = 120.0  # the window ends once the load is done; this only bounds a hang
ON_A, ON_B = 10, 15  # requests to the observed port, and to the other


LOGGED_S = 10.0  # a server logs a request as it finishes it, which may be after the client read the reply
WINDOW = "/w"  # the path of the requests made in the window (start-ups ask "/")


def get(port: int) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", WINDOW)
        connection.getresponse().read()
    finally:
        connection.close()


def both_ports(a: int, b: int) -> Callable[[], None]:
    def load() -> None:
        for _ in range(ON_B):
            get(b)
        for _ in range(ON_A):
            get(a)

    return load


def haproxy_config(a: int, b: int) -> str:
    return f"""global
    nbthread 2
    log stderr format raw local0
defaults
    mode http
    log global
    log-format "frontend %ft %HU"
    timeout client 10s
    timeout server 10s
    timeout connect 10s
frontend fa
    bind 127.0.0.1:{a}
    http-request return status 200 content-type text/plain lf-string "worker %[thread] pid %pid\\n"
frontend fb
    bind 127.0.0.1:{b}
    http-request return status 200 content-type text/plain lf-string "worker %[thread] pid %pid\\n"
"""


def settled(read: Callable[[], list[str]], enough: Callable[[list[str]], bool]) -> list[str]:
    """`read()` once `enough` of it (a server's log) is there, or after LOGGED_S: polled, as a log file or pipe
    gives no event to wait on for a line the server has yet to write."""
    deadline = time.monotonic() + LOGGED_S
    while not enough(lines := read()) and time.monotonic() < deadline:
        time.sleep(0.02)
    return lines


class StderrLog:
    """What HAProxy has logged on its stderr (a pipe), read as it comes without waiting for more."""

    def __init__(self, stderr: int) -> None:
        self.fd = stderr
        self.lines: list[str] = []
        os.set_blocking(stderr, False)

    def __call__(self) -> list[str]:
        out = b""
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except BlockingIOError:
                break
            if not chunk:
                break
            out += chunk
        self.lines += [line for line in out.decode().splitlines() if line.startswith("frontend ")]
        return list(self.lines)


def file_lines(path: Path) -> Callable[[], list[str]]:
    return lambda: path.read_text().splitlines() if path.exists() else []


def test_haproxy_two_frontends_port_a_counts_a_alone(tmp_path: Path) -> None:
    a, b = free_port("127.0.0.1"), free_port("127.0.0.1")
    path = tmp_path / "haproxy.cfg"
    path.write_text(haproxy_config(a, b))
    with haproxy(path, a, threads=2) as server:
        assert server.stderr is not None
        log = StderrLog(server.stderr.fileno())
        result = observed_under(both_ports(a, b), port=a)
        lines = settled(log, lambda got: sum(line.endswith(f" {WINDOW}") for line in got) >= ON_A + ON_B)
    on_a, on_b = lines.count(f"frontend fa {WINDOW}"), lines.count(f"frontend fb {WINDOW}")
    assert on_a == ON_A and on_b == ON_B, lines  # the witness: HAProxy's log of the window's requests
    assert result.threaded and len(result.workers) == 2
    assert sum(w.accepts or 0 for w in result.workers) == ON_A  # was ON_A + ON_B: B's frontend's too
    if result.serving_looks:  # the per-thread bytes: a connection opened in the window counts from its start
        bytes_line = "their bytes (each connection's from its start, or the first look for one open as observe began"
        assert any(bytes_line in line for line in verdict(result)), verdict(result)
    said = f"the workers listen on port {b} too: the accepts and connections above are port {a}'s alone"
    assert any(note.startswith(said) for note in result.notes), result.notes  # their CPU is every port's


def test_haproxy_reload_newcomer_credited_its_port_a_alone(tmp_path: Path) -> None:
    """A reload's newcomer (-sf) is credited the connections on A alone: its accepts on B were counted to it too."""
    a, b = free_port("127.0.0.1"), free_port("127.0.0.1")
    path = tmp_path / "haproxy.cfg"
    path.write_text(haproxy_config(a, b))
    answered: list[int] = []  # the pids A's replies name, after the reload
    kept = threading.Event()  # the newcomer dies with the driving thread: it must outlive the window
    with haproxy(path, a, threads=2) as old:
        newcomer: list[subprocess.Popen[bytes]] = []

        def load() -> None:
            newcomer.append(
                subprocess.Popen(  # takes the ports over, tells the old one to finish (-sf)
                    ["haproxy", "-db", "-f", str(path), "-sf", str(old.pid)],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    preexec_fn=dies_with(os.getpid()),
                )
            )
            deadline = time.monotonic() + START_TIMEOUT_S
            while True:  # the newcomer's first reply on A: a start-up, no event to wait on
                with contextlib.suppress(OSError):
                    if (pid := pid_answering(a)) == newcomer[0].pid:
                        answered.append(pid)
                        break
                assert time.monotonic() < deadline, "the newcomer never answered on A"
                time.sleep(0.02)
            for _ in range(ON_B):
                get(b)
            answered.extend(pid_answering(a) for _ in range(ON_A))

        try:
            result = observed_under(load, kept, port=a)
            assert newcomer, "no newcomer started"
            assert newcomer[0].stderr is not None
            log = StderrLog(newcomer[0].stderr.fileno())
            lines = settled(log, lambda got: len(got) >= ON_B + answered.count(newcomer[0].pid))
        finally:
            kept.set()  # the driving thread ends: the newcomer with it (killed here too)
            for process in newcomer:
                process.kill()
                process.wait(10)
    on_a = sum(line.startswith("frontend fa ") for line in lines)  # its start-up's asks ("/") and the window's
    assert lines.count(f"frontend fb {WINDOW}") == ON_B and on_a == answered.count(newcomer[0].pid), lines
    assert result.reloaded is not None and result.reloaded.pids == (newcomer[0].pid,), result.notes
    assert result.reloaded.accepts == (on_a,), result.reloaded  # B's 15 were credited to it too


NGINX_TWO_SERVERS = """
worker_processes {workers};
daemon off;
pid {d}/nginx.pid;
events {{ worker_connections 64; }}
http {{
    log_format kept '$server_port $pid $request_uri';
    server {{
        listen 127.0.0.1:{port};
        access_log {d}/a.log kept;
        location / {{ return 200 "a\\n"; }}
    }}
    server {{
        listen 127.0.0.1:{other};
        access_log {d}/b.log kept;
        location / {{ return 200 "b\\n"; }}
    }}
}}
"""


def test_nginx_two_server_blocks_port_a_counts_a_alone() -> None:
    a, b = free_port("127.0.0.1"), free_port("127.0.0.1")
    with nginx_by_hand(NGINX_TWO_SERVERS, a, 2, 20.0, other=str(b)) as nginx:
        result = observed_under(both_ports(a, b), port=a)
        on_a = settled(file_lines(nginx.directory / "a.log"), lambda got: len(got) >= ON_A)
        on_b = settled(file_lines(nginx.directory / "b.log"), lambda got: len(got) >= ON_B)
    assert len(on_a) == ON_A and len(on_b) == ON_B  # the witness: each server block's own log
    assert sorted(w.pid for w in result.workers) == nginx.workers
    by_pid = {w.pid: w.accepts for w in result.workers}
    # each worker's accepts on A are the requests its pid logged for A (one request a connection)
    assert by_pid == {pid: sum(1 for line in on_a if line.split()[1] == str(pid)) for pid in nginx.workers}


def test_latency_attach_port_a_counts_a_alone(tmp_path: Path) -> None:
    """latency --attach's per-worker counts (the kernel's accepts, for replies naming no worker) are port A's alone
    while another client keeps port B busy throughout: B's accepts were counted as A's connections served."""
    a, b = free_port("127.0.0.1"), free_port("127.0.0.1")
    out = tmp_path / "latency.json"
    stop, on_b = threading.Event(), []

    def other_client() -> None:  # B's own traffic, all through the run
        while not stop.is_set():
            get(b)
            on_b.append(1)

    with nginx_by_hand(NGINX_TWO_SERVERS, a, 2, 20.0, other=str(b)) as nginx:
        beside = threading.Thread(target=other_client, daemon=True)
        beside.start()
        try:
            argv = ["latency", "--attach", str(nginx.master), "--port", str(a), "--protocol", "http", "-n", "40"]
            done = subprocess.run(
                [sys.executable, "-m", "accept_order", *argv, "-c", "2", "--json", str(out)],
                capture_output=True,
                text=True,
                timeout=CAP_S,
            )
        finally:
            stop.set()
            beside.join(CAP_S)
        on_a = settled(file_lines(nginx.directory / "a.log"), lambda got: len(got) >= 40)
        logged_b = settled(file_lines(nginx.directory / "b.log"), lambda got: len(got) >= len(on_b))
    assert done.returncode == 0, done.stderr
    assert len(on_a) == 40 and len(logged_b) == len(on_b) > 0  # the witness: each server block's own log
    doc = json.loads(out.read_text())
    counts = doc["evidence"]["accept_counts"]
    if not counts["available"]:
        pytest.skip(f"no kernel accept counts here: {counts['why']}")
    pids = [c["pid"] for c in doc["counters"]]
    assert doc["served"] == [sum(1 for line in on_a if line.split()[1] == str(pid)) for pid in pids], (
        doc["served"],
        len(on_b),
    )


BLOCKING_SERVER = r"""
import socket, sys, threading
def serve(sock, port):
    while True:
        conn, _ = sock.accept()  # blocking: the thread waits in accept itself, not in epoll
        print(port, flush=True)  # the witness: one line per connection, its port
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
        conn.close()
ports = []
for _ in range(2):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    ports.append(s.getsockname()[1])
    threading.Thread(target=serve, args=(s, ports[-1]), daemon=True).start()
print(*ports, flush=True)
sys.stdin.read()  # ends with the test
"""


def test_blocking_accepts_begun_before_the_probes_are_placed_by_port() -> None:
    """Each thread of a server blocked in accept as bpftrace started is given its descriptor (/proc/TID/syscall):
    the first accept of B's thread, begun before the probes attached, was counted as A's."""
    server = subprocess.Popen(
        [sys.executable, "-c", BLOCKING_SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=dies_with(os.getpid()),
    )
    try:
        assert server.stdout is not None and server.stdin is not None
        a, b = map(int, server.stdout.readline().split())

        def load() -> None:
            get(b)  # B's thread's first accept: its call began before the probes attached
            for _ in range(3):
                get(a)

        result = observed_under(load, port=a)
        server.stdin.close()
        server.wait(CAP_S)
        logged = server.stdout.read().split()
    finally:
        server.kill()
        server.wait(CAP_S)
    assert logged.count(str(a)) == 3 and logged.count(str(b)) == 1, logged  # the witness: the server's own lines
    if not result.traced:
        pytest.skip(f"no kernel count of who accepts: {result.source}")
    assert sum(w.accepts or 0 for w in result.workers) == 3, result.workers  # was 4: B's first too
