"""observe of HAProxy splits its connections by the thread that serves them: its threads share one fd table, so the
load observe reads there is the process's ('the load is per process, not per thread'), and its verdict said which
thread serves a connection 'is not counted here'. Each HAProxy thread polls its own epoll, and a connection is
watched by the epoll of the thread it was handed to alone (thread_split.py): observe now reads each thread's epoll
(the one it sleeps on, /proc/PID/task/TID/syscall) and what it watches (its fdinfo) once an interval at most.

The witnesses are HAProxy's and the kernel's: each reply names the thread that served it, on a kept connection, so
the connections each thread serves are known from the replies; ss counts the open connections. After the window
each connection is asked again and answers from the same thread: observing moved none."""

from __future__ import annotations

import http.client
import json
import subprocess
import threading
from collections import Counter
from pathlib import Path

from conftest import wait_for
from haproxy_by_hand import THREADS, config, haproxy

from accept_order.experiments.observe.result import ObserveResult
from accept_order.experiments.observe.run import observe
from accept_order.experiments.observe.verdict import verdict
from accept_order.servers.launched.base import free_port

KEPT = 12  # kept connections: more than the threads, so that each serves several
OBSERVE_CAP_S = 120.0  # the window ends after a few looks; this only bounds a hang
LOOKS = 3  # intervals closed before the window is ended (each closes with a look)


def served_by(connection: http.client.HTTPConnection) -> int:
    """One request on the kept connection: the thread its reply names."""
    connection.request("GET", "/")
    return int(connection.getresponse().read().split()[1])


def established(port: int) -> int:
    """The kernel's count of the server's open connections on `port` (ss: its side of each)."""
    out = subprocess.run(
        ["ss", "-Htn", "state", "established", f"( sport = :{port} )"], capture_output=True, text=True, check=True
    )
    return len(out.stdout.splitlines())


def test_each_threads_connections_are_those_its_replies_name(tmp_path: Path) -> None:
    port = free_port("127.0.0.1")
    path = tmp_path / "haproxy.cfg"
    # idle kept connections stay for the whole test, however slow the machine (10 s in the shared config)
    path.write_text(config(port).replace("timeout client 10s", f"timeout client {int(OBSERVE_CAP_S)}s"))
    with haproxy(path, port) as process:
        connections = [http.client.HTTPConnection("127.0.0.1", port, timeout=10) for _ in range(KEPT)]
        try:
            answered = [served_by(c) for c in connections]
            # uneven, so that no thread's count is another's: thread 0's closed, and one of another's (multi-queue
            # spreads them evenly, 3 each, which a split read thread for the wrong thread would match too)
            other = next(i for i, t in enumerate(answered) if t != 0)
            closing = [i for i, t in enumerate(answered) if t == 0] + [other]
            for index in closing:
                connections[index].close()
            kept = [(c, t) for i, (c, t) in enumerate(zip(connections, answered, strict=True)) if i not in closing]
            wait_for(lambda: established(port), lambda n: n == len(kept), 30, "HAProxy to close its side")
            connections = [c for c, _ in kept]
            threads = [t for _, t in kept]
            intervals, enough = [0], threading.Event()

            def counted(_: object) -> None:
                intervals[0] += 1
                if intervals[0] > LOOKS:  # the first snapshot is the start's: LOOKS intervals closed after it
                    enough.set()

            result = observe(process.pid, duration_s=OBSERVE_CAP_S, interval_s=0.2, on_snapshot=counted, until=enough)
            open_after = established(port)
            again = [served_by(c) for c in connections]
        finally:
            for connection in connections:
                connection.close()
    assert again == threads  # observing moved no connection: each answers from the thread it answered from
    assert open_after == len(threads)
    expected = Counter(threads)
    counts = [expected[t] for t in range(THREADS)]
    assert counts[0] == 0 and counts != counts[::-1], counts  # uneven, as meant: no thread's count is its mirror's
    # looks are paced by their cost (fewer than the intervals on a busy machine); the window's end always takes one
    assert result.serving_why is None and result.serving_looks >= 1, (result.serving_why, result.serving_looks)
    assert [w.serving_held for w in result.workers] == counts, result.workers
    assert [w.serving_seen for w in result.workers] == counts, result.workers
    assert result.serving_unplaced == 0
    held = ", ".join(map(str, counts))
    looks = f"{result.serving_looks} look" + ("s" if result.serving_looks > 1 else "")
    line = f"connections each thread serves (those its own epoll watches, at {looks}): {held} "
    # 'in all', or where a thread was caught running at the first look (a timer's wakeup: 4 of 17,144 reads of an
    # idle HAProxy's threads), 'at the looks each was placed' and from which look: the kept connections are the same
    line += f"at the last look, {held} at most; {len(threads)} distinct "
    assert any(said.startswith(line) for said in verdict(result)), verdict(result)
    saved = result.from_dict(result.to_dict())
    assert saved == result  # the split is kept in the file as read


def test_a_file_from_before_the_split_says_nothing_of_it() -> None:
    """A result that never looked (an old file, a server of processes) saves no split and says none."""
    data = Path(__file__).parent / "data" / "observe_haproxy_threads_kept.json"  # HAProxy 2.6's, before the split
    result = ObserveResult.from_dict(json.loads(data.read_text()))
    assert result.serving_looks == 0 and "serving_looks" not in result.to_dict()
    assert all("serving_held" not in w for w in result.to_dict()["workers"])
    assert not any(line.startswith("connections each thread serves") for line in verdict(result))
