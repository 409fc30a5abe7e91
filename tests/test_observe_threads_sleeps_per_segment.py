"""observe of a threaded server over kept connections tells its sleeps per data segment, not per connection.

HAProxy 2.6 (nbthread 4) under `wrk -c8` read 'the workers slept 7888.67 times per connection', and h2o (4 threads)
under `h2load -c8 -m10` 3642.00: what the README calls a thundering herd, where each thread slept once per few
requests. A threaded server's threads share one fd table, so its load is known per process only (in a note), and
the sleeps were divided by the accepts. The process's data segments are in the result now, and the sleeps are
told per segment where a connection carried many, as they are for worker processes.

Here Debian's h2o with 4 event loops serves CONNECTIONS keep-alive connections, opened once observe's probes are
attached, each making requests until a look has seen every one held. Witnesses: the client's own count of its
requests (each one GET, written in one send: one data segment, tcpi_data_segs_in), and h2o's access log (a line per
request, the connection's id on it)."""

from __future__ import annotations

import http.client
import json
import re
import shutil
import threading
from pathlib import Path

import pytest
from h2o_config import started_h2o

from accept_order.experiments.observe.api import observe
from accept_order.experiments.observe.result import ObserveResult
from accept_order.experiments.observe.verdict import sleeps

H2O = shutil.which("h2o")
LOOPS = 4
CONNECTIONS = 4
TIMEOUT_S = 60.0

pytestmark = pytest.mark.skipif(H2O is None, reason="h2o is not installed")


def test_threaded_servers_sleeps_are_per_data_segment_over_kept_connections(tmp_path: Path, free_port: int) -> None:
    with started_h2o(tmp_path, free_port, LOOPS, TIMEOUT_S) as server:
        until, began, all_seen, out = threading.Event(), threading.Event(), threading.Event(), list[ObserveResult]()

        def snapshot(result: ObserveResult) -> None:
            began.set()
            if (result.process_connections or 0) >= CONNECTIONS:
                all_seen.set()

        def watch() -> None:
            try:
                out.append(observe(pid=server.pid, duration_s=TIMEOUT_S, on_snapshot=snapshot, until=until))
            finally:
                began.set()

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        made, errors = [0] * CONNECTIONS, list[BaseException]()

        def kept(index: int) -> None:
            """Requests over one connection until every connection has been seen held by a look."""
            try:
                conn = http.client.HTTPConnection("127.0.0.1", free_port, timeout=TIMEOUT_S)
                while not all_seen.is_set():
                    conn.request("GET", "/")
                    reply = conn.getresponse()
                    assert reply.status == 200 and reply.read() == b"ok\n"
                    made[index] += 1
                conn.close()
            except (OSError, AssertionError) as exc:
                errors.append(exc)

        clients = [threading.Thread(target=kept, args=(i,), daemon=True) for i in range(CONNECTIONS)]
        try:
            assert began.wait(TIMEOUT_S), "observe did not start"
            for client in clients:
                client.start()
            assert all_seen.wait(TIMEOUT_S), "no look saw every connection held"
        finally:
            all_seen.set()
            for client in clients:
                client.join(TIMEOUT_S)
            until.set()
            watcher.join(TIMEOUT_S)
        assert not watcher.is_alive(), "observe did not end"
        assert not errors and out, errors or "observe raised (its error is above)"
        result = out[0]
    requests = sum(made)
    logged = [line for line in (tmp_path / "access.log").read_text().splitlines() if line.strip()]
    assert len(logged) == requests and len(set(logged)) == CONNECTIONS  # h2o's own count: the same requests
    assert result.threaded and not result.loaded  # no thread's own load: the process's
    assert result.process_connections == CONNECTIONS
    assert result.process_segments_in == requests  # one data segment per request, each counted once
    said = sleeps(result)
    assert said is not None and "per connection" not in said.split(";")[0], said
    slept = sum(w.voluntary_switches or 0 for w in result.workers)
    assert f"slept {slept / requests:.2f} times per data segment received" in said, said
    carried = int(re.search(r"a connection carried ([\d,]+) of them", said).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert carried == round(requests / CONNECTIONS), said
    again = ObserveResult.from_dict(result.to_dict())  # what `show` reads back says the same
    assert sleeps(again) == said


def test_connections_closed_unseen_count_among_the_processes() -> None:
    """HAProxy's threads under wrk -c8 (tests/data/observe_haproxy_threads_kept.json: 9 accepted, 8 seen), with
    5,000 more connections of one segment each that no look saw: a single process held them all, and their segments
    are in the process's count (under wrk -H 'Connection: close' HAProxy's 5,168 segments came with no connection
    seen), so a connection's figure is over the 5,009 accepted, not the 8 seen."""
    document = json.loads((Path(__file__).parent / "data" / "observe_haproxy_threads_kept.json").read_text())
    document["workers"][3]["accepts"] += 5000
    document["process_segments_in"] += 5000
    result = ObserveResult.from_dict(document)
    said = sleeps(result)
    assert said is not None, said
    carried = int(re.search(r"a connection carried ([\d,]+) of them", said).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert carried == round(document["process_segments_in"] / sum(result.counts or ())), said
