"""Launched servers over HTTP/1.1 keep-alive (issue 28 §2): every kind that keeps connections serves a load of
K requests per connection and a pool kept for the whole run, and its own log (the witness) agrees with the
replies per worker: the requests each served, and the connections it served them on. A kind whose workers
close every connection after one answer is refused up front, with one line naming it and why.

The witness is read here on its own terms, not through analysis/witness.py: each row is [worker pid, client
port] plus, where the server numbers a request on its connection (nginx's $connection_requests, Apache's and
lighttpd's %k, HAProxy's session variable, h2o's connection id, the Node and Rack apps' own counts), that
number; a connection is a row numbered 1, or, where the server numbers none, a distinct (pid, port).
"""

from __future__ import annotations

import json
import socket
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_one_error_line, run_cli, wait_for

from accept_order.analysis.witness import agreement
from accept_order.core.protocol import HTTP_KEEPALIVE, parse_reply
from accept_order.servers.launched.log_receiver import LogReceiver
from accept_order.servers.registry import KINDS

WORKERS = 2
PER_CONNECTION = 5
REQUESTS = 200  # 40 connections of 5 requests
POOL = 8

KEEPING = [name for name, kind in KINDS.items() if kind.launched and kind.witness and not kind.closes_connections]
CLOSING = [name for name, kind in KINDS.items() if kind.closes_connections]


def runnable(name: str) -> str:
    """The kind's default mode, or a skip with its own reason."""
    kind = KINDS[name]
    mode = kind.default_mode()
    why = kind.missing() or kind.unavailable(mode)
    if why:
        pytest.skip(f"{name}: {why}")
    return mode


def latency(tmp_path: Path, name: str, *load: str) -> dict[str, Any]:
    """`accept-order latency --server NAME ...` through the CLI; its saved result."""
    out = tmp_path / f"{name}.json"
    args = ["latency", "--server", name, "-w", str(WORKERS), "--driver-procs", "2", *load, "--json", str(out)]
    result = run_cli(args)
    assert result.exit_code == 0, result.output
    return dict(json.loads(out.read_text()))


def logged(result: dict[str, Any], per_connection: int = 0) -> tuple[list[int], list[int], list[list[int]]]:
    """Per worker (index order): requests and connections the server's own log names; and each connection's
    request numbers (by (pid, port) where the log numbers none: then each connection's count of rows).
    A log names a connection by its client port, and loopback reuses a port in TIME_WAIT at once
    (net.ipv4.tcp_tw_reuse 2; a busy CI run saw two connections of one worker on one port): a numbered log
    starts a connection at each request 1, an unnumbered one at each `per_connection` K rows (0: one each)."""
    witness = result["evidence"]["witness"]
    pids = [c["pid"] for c in sorted(result["counters"], key=lambda c: c["index"])]
    rows = witness["requests"]
    assert rows and all(row[0] in pids for row in rows), "a logged request of no worker of this run"
    requests = Counter(row[0] for row in rows)
    numbered = "numbered_by" in witness
    assert all(len(row) == (3 if numbered else 2) for row in rows)
    by_port: dict[tuple[int, int], list[list[int]]] = {}
    for row in rows:
        held = by_port.setdefault((row[0], row[1]), [])
        number = row[2] if numbered else 1
        full = len(held[-1]) == per_connection if held and per_connection else False
        if not held or (numbered and number == 1) or (not numbered and full):
            held.append([])
        held[-1].append(number)
    connections = Counter(pid for (pid, _), held in by_port.items() for _ in held)
    every = [numbers for held in by_port.values() for numbers in held]
    return [requests[p] for p in pids], [connections[p] for p in pids], every


@pytest.mark.parametrize("name", KEEPING)
def test_k_requests_per_connection_agree_with_its_log(tmp_path: Path, name: str) -> None:
    runnable(name)
    result = latency(tmp_path, name, "-n", str(REQUESTS), "-c", "4", "--requests-per-connection", str(PER_CONNECTION))
    assert result["errors"] == {} and sum(result["served"]) == REQUESTS
    requests, connections, by_connection = logged(result, PER_CONNECTION)
    assert requests == result["served"]  # each request where the replies put it
    assert connections == result["connections"]  # each connection with the worker its first reply named
    # every connection carried K requests, numbered 1..K by the server where it numbers them, but the last
    # of each of the -c slots, which carries what was left when the load's count ran out
    lengths = Counter(len(numbers) for numbers in by_connection)
    assert max(lengths) == PER_CONNECTION and sum(n for k, n in lengths.items() if k < PER_CONNECTION) <= 4
    if "numbered_by" in result["evidence"]["witness"]:
        assert all(numbers == list(range(1, len(numbers) + 1)) for numbers in by_connection)


@pytest.mark.parametrize("name", KEEPING)
def test_a_pool_kept_for_the_whole_run_agrees_with_its_log(tmp_path: Path, name: str) -> None:
    mode = runnable(name)
    assert KINDS[name].mode(mode).multiplexes, "the default mode must hold the whole pool"
    result = latency(tmp_path, name, "--pool", "-c", str(POOL), "--requests-per-connection", "0", "-n", str(REQUESTS))
    assert result["errors"] == {} and sum(result["served"]) == REQUESTS
    assert (result["pool"]["opened"], result["pool"]["planned"]) == (POOL, POOL)
    requests, connections, _ = logged(result)
    assert requests == result["served"]
    assert connections == result["connections"]
    assert sum(connections) == POOL and result["held_at_end"] == result["connections"]  # none closed early


@pytest.mark.parametrize("name", CLOSING)
@pytest.mark.parametrize(
    "load", [["--requests-per-connection", "5"], ["--pool", "-c", "4", "--requests-per-connection", "0"]]
)
def test_a_kind_that_closes_every_connection_is_refused(name: str, load: list[str]) -> None:
    result = run_cli(["latency", "--server", name, "-n", "10", *load])
    line = assert_one_error_line(result, 2, name, "cannot keep a connection", load[0])
    assert KINDS[name].closes_connections in line  # and why


def test_refused_before_any_run_among_several_servers() -> None:
    """nginx, which keeps them, would run first: the refusal comes before it starts."""
    closing = CLOSING[0]
    result = run_cli(["latency", "--server", f"nginx,{closing}", "--requests-per-connection", "3", "-n", "9"])
    assert_one_error_line(result, 2, closing, "cannot keep a connection")
    assert result.stdout == ""


def test_a_run_that_served_nothing_fails_and_says_why(tmp_path: Path) -> None:
    """Each request outlives its timeout: the report and the file keep the run, the command exits 1 with the
    reason."""
    out = tmp_path / "none.json"
    args = ["latency", "-w", "1", "--work", "1s", "--timeout", "100ms", "-n", "2", "-c", "2"]
    result = run_cli([*args, "--requests-per-connection", "2", "--json", str(out)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.splitlines() == [f"wrote {out}", "accept-order: error: served nothing: 2 × timeout"]
    saved = json.loads(out.read_text())
    assert sum(saved["served"]) == 0 and saved["errors"] == {"timeout": 2}


def test_replies_are_framed_by_length_or_chunks() -> None:
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"
    nginx = head + b"c\r\nworker 7049\n\r\n0\r\n\r\n"  # nginx's Lua ngx.say, as it answered here
    assert HTTP_KEEPALIVE.reply_end(nginx + b"HTTP/1.1") == len(nginx)
    assert HTTP_KEEPALIVE.body(nginx) == b"worker 7049\n" and parse_reply(HTTP_KEEPALIVE.body(nginx)) == (None, 7049)
    for cut in range(len(head), len(nginx)):  # never whole before its last byte
        assert HTTP_KEEPALIVE.reply_end(nginx[:cut]) == 0
    # chunks split anywhere, an extension, a trailer; a body that holds what looks like a last chunk
    split = head + b"7;x=1\r\nworker \r\n5\r\n7049\n\r\n0\r\nX-T: 1\r\n\r\n"
    assert HTTP_KEEPALIVE.reply_end(split) == len(split) and HTTP_KEEPALIVE.body(split) == b"worker 7049\n"
    tricky = head + b"a\r\n" + b"\r\n0\r\n\r\nabc" + b"\r\n0\r\n\r\n"  # 10 bytes of content
    assert HTTP_KEEPALIVE.reply_end(tricky) == len(tricky)
    lengthed = b"HTTP/1.1 200 OK\r\ncontent-length: 12\r\n\r\nworker 7049\n"
    assert HTTP_KEEPALIVE.reply_end(lengthed + b"HTTP") == len(lengthed)


def test_a_reply_that_names_no_worker_says_why() -> None:
    assert HTTP_KEEPALIVE.complaint(b"HTTP/1.1 503 Service Unavailable\r\n\r\n") == "bad reply (HTTP 503)"
    assert HTTP_KEEPALIVE.complaint(b"SSH-2.0-OpenSSH\r\n") == "bad reply (not an HTTP answer)"
    assert "names no worker" in HTTP_KEEPALIVE.complaint(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nhi")


def test_the_agreement_names_what_differs() -> None:
    witness = {"source": "nginx access log", "requests": [[10, 1, 1], [10, 1, 2], [11, 2, 1]], "numbered_by": "$x"}
    same = agreement(witness, [10, 11], [2, 1], [1, 1])
    assert same is not None and same.agrees
    assert same.line() == (
        "nginx access log: the same requests per worker (2 1) and the same connections per worker (1 1; "
        "connections by its $x) as the replies"
    )
    moved = agreement(witness, [10, 11], [1, 2], [1, 1])
    assert moved is not None and not moved.agrees and "requests per worker 2 1, the replies 1 2" in moved.line()
    fewer = agreement(witness, [10, 11], [2, 1], [2, 0])
    assert fewer is not None and not fewer.agrees and "connections per worker 1 1" in fewer.line()
    late = agreement(witness, [10, 11], [1, 1], [1, 1], failed=1)  # one the client gave up on, logged
    assert late is not None and "within the 1 request the load had no answer to" in late.line()
    by_port = agreement({"source": "s", "requests": [[10, 1], [10, 1], [10, 2]]}, [10], [3], [2])
    assert by_port is not None and by_port.agrees and "by client port" in by_port.line()


def test_the_log_receiver_counts_what_the_kernel_dropped() -> None:
    """HAProxy's log comes over UDP: every line sent is read, or counted by the kernel as dropped."""
    receiver = LogReceiver()
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
            sender.sendto(b"0 40000 1", receiver.address)
            wait_for(lambda: list(receiver.lines), bool, 5.0, "the first line")
            receiver._stop.set()  # nothing reads now: a small buffer fills and the kernel drops the rest
            receiver._thread.join()
            receiver.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            for i in range(200):
                sender.sendto(f"1 {40001 + i} 1".encode(), receiver.address)
    finally:
        lines, dropped = receiver.close()
    assert lines[0] == "0 40000 1" and dropped > 0 and len(lines) - 1 + dropped == 200
    assert receiver.close() == (lines, dropped)  # twice is harmless
    witness = {"source": "haproxy log", "requests": [[10, 1, 1]], "numbered_by": "n", "dropped": dropped}
    said = agreement(witness, [10], [1 + dropped], [1])
    assert said is not None and f"{dropped} of its lines were lost on their way to the tool" in said.line()
