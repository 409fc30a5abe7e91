"""A server that ends kept connections before the client does (loads/kept.py).

The server is the test's own: worker processes on one port (an SO_REUSEPORT group, so the kernel picks the
worker of each new connection), answering HTTP/1.1 `worker PID` with a Content-Length, and ending each
connection after `after` answers in one of four ways:
- `header`: the `after`-th answer says `Connection: close`, and the worker closes after it;
- `eof`: the next request is read, then the connection is closed without an answer (a FIN);
- `reset`: the next request is not read and the connection is reset (SO_LINGER 0: an RST);
- `idle`: the worker closes right after the `after`-th answer (a FIN, nothing said), while the connection
  is idle or the client's next request is on its way.
And `full`, as Apache's event MPM when a child is short of connection slots: a worker that holds `after`
connections closes the oldest it has answered and read no request on since (in keep-alive) when it accepts
another. And two that answer `after`
requests in all, then fail every one: `refuse` closes each connection when a request
arrives (a FIN, no answer: a re-sent request meets it too), `cut` sends half an answer, then closes.
Each worker counts what it did (its log): connections accepted, requests answered, connections it ended and
how many requests each connection carried. The client's account is checked against it: every request
served, once; the connections each worker accepted; the connections each worker ended.
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import struct
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

from accept_order.analysis.witness import agreement
from accept_order.core.histogram import LatencyHistogram
from accept_order.core.load_summary import LoadSummary, ServerCloses
from accept_order.core.measures import DriverStats, Environment, WorkerCounters
from accept_order.core.processes import FORK, end_processes
from accept_order.core.protocol import HTTP_KEEPALIVE, KEEP_LINE
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.core.target import ReplyAttribution
from accept_order.experiments.latency.kept_report import kept_lines
from accept_order.experiments.latency.result import LATENCY_SHAPE, LatencyResult
from accept_order.loads.generator import LoadResult, run_load
from accept_order.results.schema import SchemaError
from accept_order.servers.registry import KINDS

WORKERS = 3
REPORT_TIMEOUT_S = 10.0


def _answer(pid: int, close: bool) -> bytes:
    body = f"worker {pid}\n".encode()
    said = b"Connection: close\r\n" if close else b""
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), said, body)


@dataclass
class Log:
    """One worker's own account."""

    accepted: int = 0
    answered: int = 0
    ended: int = 0  # connections it closed first (told, closed or reset)
    told: int = 0  # answers that said Connection: close
    peak: int = 0  # the most connections it held at once
    carried: list[int] = field(default_factory=list)  # requests answered on each connection, once it is gone


def _serve(listener: socket.socket, stop_fd: int, how: str, after: int, out: Connection) -> None:
    """A worker: its own listener of the group, its connections, until `stop_fd` is readable."""
    pid = os.getpid()
    keep, last = _answer(pid, False), _answer(pid, how == "header")
    log = Log()
    sel = selectors.DefaultSelector()
    listener.setblocking(False)
    sel.register(listener, selectors.EVENT_READ, "listener")
    sel.register(stop_fd, selectors.EVENT_READ, "stop")
    conns: dict[socket.socket, list[Any]] = {}  # socket -> [bytes read, answers on it]

    def end(sock: socket.socket, first: bool) -> None:
        log.carried.append(conns.pop(sock)[1])
        log.ended += first
        sel.unregister(sock)
        sock.close()

    while True:
        for key, _ in sel.select():
            if key.data == "stop":
                for sock in list(conns):
                    end(sock, False)
                out.send(log)
                return
            if key.data == "listener":
                try:
                    sock, _ = listener.accept()
                except BlockingIOError:
                    continue
                sock.setblocking(False)
                sel.register(sock, selectors.EVENT_READ, "conn")
                kept = [c for c, state in conns.items() if state[1] and not state[0]]  # answered, no request read
                if how == "full" and len(conns) >= after and kept:
                    end(kept[0], True)
                conns[sock] = [b"", 0]
                log.accepted += 1
                log.peak = max(log.peak, len(conns))
                continue
            sock = key.fileobj  # type: ignore[assignment]
            if sock not in conns:
                continue  # closed by a `full` accept earlier in this batch
            state = conns[sock]
            if (
                how == "reset" and state[1] >= after and sock.recv(1, socket.MSG_PEEK)
            ):  # a request, not the client's close
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                end(sock, True)
                continue
            data = sock.recv(65536)
            if not data:
                end(sock, False)  # the client closed it
                continue
            state[0] += data
            while b"\r\n\r\n" in state[0]:
                state[0] = state[0].partition(b"\r\n\r\n")[2]
                if how in ("refuse", "cut") and log.answered >= after:
                    if how == "cut":
                        sock.sendall(keep[: len(keep) // 2])
                    end(sock, True)
                    break
                if how == "eof" and state[1] >= after:
                    end(sock, True)
                    break
                ending = state[1] + 1 == after and how in ("header", "idle")
                sock.sendall(last if ending else keep)
                state[1] += 1
                log.answered += 1
                if ending:
                    log.told += how == "header"
                    end(sock, True)
                    break


class ClosingServer:
    """WORKERS worker processes (_serve) on one port; `logs()` stops them and returns each one's account."""

    def __init__(self, how: str, after: int, workers: int = WORKERS) -> None:
        self.listeners = []
        port = 0
        for _ in range(workers):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            s.bind(("127.0.0.1", port))
            s.listen(256)
            port = s.getsockname()[1]
            self.listeners.append(s)
        self.address = ("127.0.0.1", port)
        self.stop_r, self.stop_w = os.pipe()
        self.pipes: list[Connection] = []
        self.procs: list[Any] = []
        for listener in self.listeners:
            receiver, sender = FORK.Pipe(duplex=False)
            proc = FORK.Process(target=_serve, args=(listener, self.stop_r, how, after, sender))
            self.procs.append(proc)
            self.pipes.append(receiver)
            proc.start()
            sender.close()
        for s in self.listeners:
            s.close()  # the workers hold theirs
        self.pids = tuple(p.pid for p in self.procs)

    def logs(self) -> list[Log]:
        os.write(self.stop_w, b"x")
        logs = []
        for pipe in self.pipes:
            assert wait([pipe], timeout=REPORT_TIMEOUT_S), "a worker of the test's server did not report"
            logs.append(pipe.recv())
        return logs

    def close(self) -> None:
        end_processes(self.procs)
        for pipe in self.pipes:
            pipe.close()
        os.close(self.stop_r)
        os.close(self.stop_w)


def drive(how: str, after: int, load: ConcurrentLoad, workers: int = WORKERS) -> tuple[LoadResult, list[Log]]:
    server = ClosingServer(how, after, workers)
    try:
        result = run_load(server.address, ReplyAttribution(server.pids), load.validated(), protocol=HTTP_KEEPALIVE)
        return result, server.logs()
    finally:
        server.close()


def per_worker(counts: Counter[int] | None) -> list[int]:
    return [(counts or Counter()).get(i, 0) for i in range(WORKERS)]


def assert_the_same_account(result: LoadResult, logs: list[Log], requests: int) -> None:
    """Every request served once, by the worker that answered it; each connection for the worker that accepted it."""
    assert not result.errors, result.errors
    assert sum(result.served.values()) == requests
    assert per_worker(result.served) == [log.answered for log in logs]
    assert per_worker(result.connections) == [log.accepted for log in logs]


@pytest.mark.parametrize("how", ["eof", "reset"])
def test_a_request_on_a_connection_the_server_closed_is_sent_again_once(how: str) -> None:
    """K = 0 over 6 connections, each closed by its worker when the request after its 4th arrives: that
    request goes again on a new connection and is served; the client counts each close for the worker that
    held the connection, and the requests it sent again, as the workers counted them."""
    result, logs = drive(
        how, 4, ConcurrentLoad(connections=300, concurrency=6, driver_procs=1, requests_per_connection=0)
    )
    assert_the_same_account(result, logs, 300)
    assert per_worker(result.server_closed) == [log.ended for log in logs]
    assert sum(log.ended for log in logs) >= 300 // 5 - 6  # the workers closed one connection in five requests
    assert result.resent == sum(log.ended for log in logs)  # each close had a request under way
    assert not any(result.told_close.values())


@pytest.mark.parametrize("after", [3, 1])
def test_connection_close_is_served_and_a_pool_keeps_its_size(after: int) -> None:
    """A pool of 8 over 2 drivers, each connection's 3rd (or 1st: every) answer saying Connection: close:
    every answer is served, the client counts them by worker, the pool opens all 8 (a first answer that
    closes opened one), another connection goes in place of each, and no worker ever held more than the
    pool (each closed its connection before the client opened the next)."""
    load = ConcurrentLoad(connections=400, concurrency=8, driver_procs=2, requests_per_connection=0, pool=True)
    result, logs = drive("header", after, load)
    assert_the_same_account(result, logs, 400)
    assert result.pool == (8, 8)
    told = sum(log.told for log in logs)
    assert per_worker(result.told_close) == [log.told for log in logs] and told >= 400 // after - 8
    assert not any(result.server_closed.values()) and result.resent == 0
    assert max(log.peak for log in logs) <= 8
    assert all(n <= after for log in logs for n in log.carried)


@pytest.mark.parametrize("how", ["header", "eof"])
def test_the_new_connection_carries_the_rest_of_the_k_requests(how: str) -> None:
    """K = 5 with the server ending a connection after 3 answers: the client's next connection carries the
    other 2 and then closes itself, so the workers end about one connection in two (without the carry,
    every connection would carry 3 and be ended by its worker)."""
    load = ConcurrentLoad(connections=500, concurrency=4, driver_procs=1, requests_per_connection=5)
    result, logs = drive(how, 3, load)
    assert_the_same_account(result, logs, 500)
    carried = Counter(n for log in logs for n in log.carried)
    ended = sum(log.ended for log in logs)
    assert set(carried) <= {1, 2, 3}, carried
    # every connection the workers ended carried 3 (and so may one the load's end cut short before its 4th)
    assert ended <= carried[3] <= ended + 4
    assert carried[2] >= ended - 4  # and the next, the rest of its 5 (but for those cut at the load's end)
    counted = result.told_close if how == "header" else result.server_closed
    assert per_worker(counted) == [log.ended for log in logs]


def test_a_connection_closed_while_idle_is_replaced() -> None:
    """The worker closes after each connection's 2nd answer, saying nothing: the client finds it closed
    while idle, or when its next request meets the close (then sends that request again). Every request is
    served once; each close the client saw is one the workers made (it closes the ones it did not see yet
    at the load's end, at most one per connection open then)."""
    load = ConcurrentLoad(connections=300, concurrency=6, driver_procs=1, requests_per_connection=0)
    result, logs = drive("idle", 2, load)
    assert_the_same_account(result, logs, 300)
    ended = [log.ended for log in logs]
    seen = per_worker(result.server_closed)
    assert all(s <= e for s, e in zip(seen, ended, strict=True)) and sum(seen) >= sum(ended) - 6
    assert result.resent <= sum(seen)


def test_a_pool_whose_server_closes_idle_connections_to_accept_more() -> None:
    """A pool of 4 over one worker that holds at most 2: from the pool's fill on, each connection it accepts
    beyond 2 closes its oldest (idle, or with the client's next request on its way). Every request is served
    once, each connection counted once, each close the client saw is one the worker made (it closes those it
    has not seen yet at the load's end itself), and the pool opened all 4 (each answered before the next)."""
    load = ConcurrentLoad(connections=200, concurrency=4, driver_procs=1, requests_per_connection=0, pool=True)
    result, logs = drive("full", 2, load, workers=1)
    assert not result.errors, result.errors
    assert sum(result.served.values()) == logs[0].answered == 200
    assert result.connections == Counter({0: logs[0].accepted}) and result.pool == (4, 4)
    seen, ended = result.server_closed.get(0, 0), logs[0].ended
    assert ended - 4 <= seen <= ended and seen >= 2  # 2 during the fill already
    assert logs[0].peak <= 4  # the pool's size: the client opens one only in place of one the worker closed


def test_a_second_close_is_a_failure_and_a_cut_reply_is_one() -> None:
    """One worker that answers 2 requests, then closes each connection as its request arrives: the 3rd
    request, under way on the kept connection, is sent again once, and fails on the new one (closed before
    its first answer); the 4th fails on a connection of its own. A worker that cuts its 3rd answer short:
    a failure, nothing sent again."""
    load = ConcurrentLoad(connections=4, concurrency=1, driver_procs=1, requests_per_connection=0, timeout_s=10.0)
    result, logs = drive("refuse", 2, load, workers=1)
    assert sum(result.served.values()) == logs[0].answered == 2
    assert dict(result.errors) == {"no reply": 2}
    assert result.resent == 1 and dict(result.server_closed) == {0: 1}  # the one with answers on it
    assert logs[0].accepted == logs[0].ended == 3  # the kept one, the re-sent one's, the 4th's
    result, logs = drive("cut", 2, load, workers=1)
    assert sum(result.served.values()) == 2 and dict(result.errors) == {"no reply": 2}
    assert result.resent == 0 and not result.server_closed and logs[0].accepted == 2


def test_the_close_count_in_a_summary_and_a_file() -> None:
    """The counts go per worker into the load's summary and its file's `server_closes`, add over loads, and
    a file without the key (older, or a server that closed none) loads with none."""
    result, logs = drive(
        "eof", 2, ConcurrentLoad(connections=60, concurrency=2, driver_procs=1, requests_per_connection=0)
    )
    summary = result.summary(WORKERS)
    assert summary.closes.closed == tuple(log.ended for log in logs) and summary.closes.resent == sum(
        summary.closes.closed
    )
    doc = summary.to_dict()
    assert doc["server_closes"]["closed"] == [log.ended for log in logs]
    back = LoadSummary.from_dict(doc)
    assert back.closes == summary.closes
    twice = back.extend(back)
    assert twice.closes.resent == 2 * summary.closes.resent
    del doc["server_closes"]
    assert not LoadSummary.from_dict(doc).closes and "server_closes" not in LoadSummary.from_dict(doc).to_dict()
    assert ServerCloses.from_dict(None) == ServerCloses()


def test_connection_close_in_a_reply_head() -> None:
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
    assert not HTTP_KEEPALIVE.closes(head + b"\r\nok")
    assert HTTP_KEEPALIVE.closes(head + b"Connection: close\r\n\r\nok")
    assert HTTP_KEEPALIVE.closes(head + b"connection: Upgrade, CLOSE\r\n\r\nok")
    assert not HTTP_KEEPALIVE.closes(head + b"Connection: keep-alive\r\n\r\nConnection: close")  # the body's
    assert HTTP_KEEPALIVE.closes(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")  # 1.0 closes by default
    assert not HTTP_KEEPALIVE.closes(b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n\r\nok")
    assert not KEEP_LINE.closes(b"worker 1 pid 2\n")


def test_apache_event_closing_kept_connections_agrees_with_its_log(tmp_path: Path) -> None:
    """Apache's event MPM, one child of 25 threads, each request 1 ms of work, a pool of 32 kept for the run:
    the child, short of connection slots, closes kept connections mid-run (measured here: 523 in a 3 s run,
    each with the client's next request on its way). Every request is served, none failed; its access log
    (read here row by row) holds each request once, where the replies put it (so nothing for a first attempt
    the client sent again), and each connection with the worker its first reply named (%k numbers 1)."""
    kind = KINDS["apache"]
    why = kind.missing() or kind.unavailable("event")
    if why:
        pytest.skip(f"apache: {why}")
    out = tmp_path / "apache.json"
    args = ["latency", "--server", "apache", "-m", "event", "-w", "1", "--work", "1ms", "--pool", "-c", "32"]
    result = run_cli([*args, "--requests-per-connection", "0", "-n", "1500", "--json", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["errors"] == {} and doc["served"] == [1500]
    closes = doc["server_closes"]
    assert closes["closed"][0] > 0 and 0 <= closes["resent"] <= closes["closed"][0]
    rows = doc["evidence"]["witness"]["requests"]
    pid = doc["counters"][0]["pid"]
    assert len(rows) == 1500 and all(row[0] == pid for row in rows)
    assert [sum(1 for row in rows if row[2] == 1)] == doc["connections"]
    # the pool's 32, then one in place of each closed (but for those the load's end left closed)
    assert closes["closed"][0] - 32 <= sum(doc["connections"]) - 32 <= closes["closed"][0]
    assert f"the server closed {closes['closed'][0]} kept connection" in result.stdout
    assert "apache access log: the same requests per worker (1500)" in result.stdout


def kept_run(closes: ServerCloses) -> LatencyResult:
    """A latency run of 2 workers over a pool of 4 kept for the run, with the server's closes given."""
    histogram = LatencyHistogram()
    histogram.add(1000, 100)
    return LatencyResult(
        server=ServerSpec(mode="epoll", workers=2).validated(),
        load=ConcurrentLoad(connections=100, concurrency=4, requests_per_connection=0, pool=True),
        environment=Environment("Linux", "6.18", "x86_64", 2, 65536, "3.11", "host", "2026-11-20T00:00:00+00:00"),
        port=8080,
        histogram=histogram,
        errors={},
        served=(40, 60),
        counters=(WorkerCounters(0, 1000), WorkerCounters(1, 1001)),
        drivers=(DriverStats(0, 4, 100, 1.0, 0.1, 0.0),),
        wall_s=1.0,
        connections=(3, 10),
        held_at_end=(1, 3),
        pool=(4, 4),
        server_closes=closes,
    )


def test_the_report_and_the_file_say_what_the_server_closed() -> None:
    """The kept lines say the closes per worker and the requests sent again; the file keeps them in its shape
    and reads them back; a file without them (older, or a server that closed none) loads with none."""
    run = kept_run(ServerCloses(closed=(0, 9), told=(2, 0), resent=7))
    said = [str(line) for line in kept_lines(run)]
    assert (
        "the server closed 9 kept connections (worker 1: 9); 7 requests under way on them were sent again on new "
        "ones, once each; the other 2 were idle"
    ) in said
    assert any(line.startswith("2 replies said Connection: close (worker 0: 2): each was served") for line in said)
    doc = run.to_dict()
    LATENCY_SHAPE.check(doc, "run")
    assert doc["server_closes"] == {"closed": [0, 9], "told": [2, 0], "resent": 7}
    assert LatencyResult.from_dict(doc).server_closes == run.server_closes
    bad = {**doc, "server_closes": {"closed": [-1]}}
    with pytest.raises(SchemaError):
        LATENCY_SHAPE.check(bad, "run")
    del doc["server_closes"]
    LATENCY_SHAPE.check(doc, "run")
    older = LatencyResult.from_dict(doc)
    assert not older.server_closes and "server_closes" not in older.to_dict()
    assert not any("server closed" in str(line) or "Connection: close" in str(line) for line in kept_lines(older))


def test_the_agreement_says_the_requests_sent_again() -> None:
    """A re-sent request is one row in the log: the agreement says so when the counts agree, and where the
    log holds more, no more than were sent again, it says they may be those (a server that logged one and
    closed without answering)."""
    witness = {"source": "log", "numbered_by": "%k", "requests": [[10, 1, 1], [10, 1, 2], [10, 2, 1]]}
    same = agreement(witness, [10], [3], [2], resent=1)
    assert same is not None and same.agrees
    assert same.line().endswith("(the 1 sent again after the server closed their connection: once each)")
    more = agreement(witness, [10], [2], [2], resent=1)
    assert more is not None and not more.agrees and "its 1 more are within the 1 the load sent again" in more.line()
    assert "sent again" not in (agreement(witness, [10], [3], [2]) or more).line()
