"""observe of HAProxy splits the bytes its connections carry by the thread that serves them: the connections each
thread serves were split (each thread's own epoll watches those handed to it, thread_split.py), but the bytes stayed
the process's ('the load is per process, not per thread'). A connection stays with the thread it was handed to, so
what it carried, from its first look to its close (load.py, by its inode), is that thread's.

The witnesses are HAProxy's and the client's: each reply names the thread that served it, on a kept connection, and
the client knows to the byte what it sent on each (a request padded to a size of its own), which the kernel counts
as the server's bytes received (tcpi_bytes_received). ss counts the
open connections: none closed while observed."""

from __future__ import annotations

import socket
import subprocess
import threading
from collections import Counter
from pathlib import Path

from haproxy_by_hand import THREADS, config, haproxy

from accept_order.experiments.observe.run import observe
from accept_order.experiments.observe.verdict import verdict
from accept_order.servers.launched.base import free_port

KEPT = 8  # kept connections: more than the threads, so that most serve several
OBSERVE_CAP_S = 120.0  # the window ends after a few looks; this only bounds a hang
LOOKS = 3  # intervals closed before the window is ended (each closes with a look)


def request(pad: int) -> bytes:
    return b"GET / HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"p" * pad + b"\r\n\r\n"


def asked(client: socket.socket, pad: int) -> tuple[int, int]:
    """One request on the kept connection: (the thread its reply names, the bytes of the reply)."""
    client.sendall(request(pad))
    reply = b""
    while b"\r\n\r\n" not in reply:
        reply += client.recv(4096)
    head, _, body = reply.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    while len(body) < length:
        body += client.recv(4096)
    return int(body.split()[1]), len(head) + 4 + len(body)


def established(port: int) -> int:
    """The kernel's count of the server's open connections on `port` (ss: its side of each)."""
    out = subprocess.run(
        ["ss", "-Htn", "state", "established", f"( sport = :{port} )"], capture_output=True, text=True, check=True
    )
    return len(out.stdout.splitlines())


def test_each_threads_bytes_are_those_its_connections_were_sent(tmp_path: Path) -> None:
    port = free_port("127.0.0.1")
    path = tmp_path / "haproxy.cfg"
    path.write_text(config(port).replace("timeout client 10s", f"timeout client {int(OBSERVE_CAP_S)}s"))
    with haproxy(path, port) as process:
        clients = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(KEPT)]
        try:
            threads = [asked(c, 0)[0] for c in clients]  # before the window: not counted
            sent: Counter[int] = Counter()
            intervals, enough = [0], threading.Event()
            failed: list[BaseException] = []

            def counted(_: object) -> None:
                intervals[0] += 1
                if intervals[0] == 1:  # the start's snapshot: the first look is taken, the window has begun
                    try:
                        for index, client in enumerate(clients):
                            pad = (
                                100 * (index + 1) * (index + 1)
                            )  # a size of its own (under HAProxy's 15 kB of headers)
                            thread, _ = asked(client, pad)
                            assert thread == threads[index]  # kept by the thread it was handed to
                            sent[thread] += len(request(pad))
                    except BaseException as exc:  # said by the test, not lost in observe's loop
                        failed.append(exc)
                        enough.set()
                if intervals[0] > LOOKS:
                    enough.set()

            result = observe(process.pid, duration_s=OBSERVE_CAP_S, interval_s=0.2, on_snapshot=counted, until=enough)
            open_after = established(port)
        finally:
            for client in clients:
                client.close()
    assert not failed, failed
    assert open_after == KEPT  # none closed in the window: each one's bytes are all of the window's
    assert result.serving_why is None and result.serving_looks >= 1, (result.serving_why, result.serving_looks)
    assert [w.serving_seen for w in result.workers] == [threads.count(t) for t in range(THREADS)], result.workers
    # the kernel's bytes received on each thread's connections: what the client sent on them in the window
    assert [w.serving_bytes_in for w in result.workers] == [sent[t] for t in range(THREADS)], (result.workers, sent)
    moved_in = ", ".join(f"{sent[t]:,}" for t in range(THREADS))
    assert any(f"to the thread whose epoll watched it): {moved_in} in, " in said for said in verdict(result)), verdict(
        result
    )
    assert result.from_dict(result.to_dict()) == result  # kept in the file as read
