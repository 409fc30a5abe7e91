"""observe's sleeps per data segment with several workers, where most connections open and close between two looks.

A gunicorn of 3 gthread workers (keep-alive 30 s) under `latency --attach --requests-per-connection 20`: observe
said 'the workers slept 29.98 times per data segment received ...; a connection carried 20 of them', where the
workers' sleeps over the requests gunicorn's access log counted made 3.5 a request. The sleeps are all the
workers' over every connection; the segments only those of the connections a look saw (84 of 717): the other
633 connections' segments are in no worker's count (which worker held them is not known), only their bytes. Their
segments are taken in the bytes' proportion now, said as 'about'.

Here PyPI's gunicorn with 2 gthread workers serves 60 connections of 20 requests each, one after another, each
a request of one data segment (HTTP/1.1 keep-alive, closed by the client after its 20th answer): the figure per
segment must be the sleeps over those 1,200 requests."""

from __future__ import annotations

import os
import re
import shutil
import socket
import threading

import pytest
from test_observe_thread_sleeps import gunicorn_gthread  # noqa: F401 - the fixture

from accept_order.experiments.observe.api import observe
from accept_order.experiments.observe.result import ObserveResult
from accept_order.experiments.observe.verdict import sleeps

CONNECTIONS = 60
REQUESTS = 20  # per connection
TIMEOUT_S = 120.0
REQUEST = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("bpftrace") is None, reason="the accepts counted need root and bpftrace"
)


def kept_connection(port: int) -> None:
    """REQUESTS requests over one connection, each sent once the one before is answered, then closed."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        for _ in range(REQUESTS):
            sock.sendall(REQUEST)
            reply = b""
            while b"\r\n\r\n" not in reply:
                reply += sock.recv(65536)
            head, _, body = reply.partition(b"\r\n\r\n")
            length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
            while len(body) < length:
                body += sock.recv(65536)


def test_several_workers_sleeps_per_segment_count_the_unlooked_connections_segments(
    gunicorn_gthread: tuple[int, list[int]],  # noqa: F811 - the fixture imported above
) -> None:
    port, _ = gunicorn_gthread
    began, until, out = threading.Event(), threading.Event(), list[object]()

    def run() -> None:
        try:
            out.append(observe(port=port, duration_s=TIMEOUT_S, on_snapshot=lambda _r: began.set(), until=until))
        except BaseException as exc:  # noqa: BLE001 - handed to the test's thread
            out.append(exc)
            began.set()

    watcher = threading.Thread(target=run, daemon=True)
    watcher.start()
    try:
        assert began.wait(TIMEOUT_S), "observe did not start"
        for _ in range(CONNECTIONS):
            kept_connection(port)
    finally:
        until.set()
        watcher.join(TIMEOUT_S)
    assert not watcher.is_alive(), "observe did not end"
    (result,) = out
    if isinstance(result, BaseException):
        raise result
    assert isinstance(result, ObserveResult)
    assert sum(result.counts or ()) == CONNECTIONS, result.counts  # the kernel's accepts: all of ours, no other
    assert result.closed_unlooked, "no connection opened and closed between two looks: nothing to check here"
    said = sleeps(result)
    assert said is not None
    slept = sum(w.voluntary_switches or 0 for w in result.workers)
    per_segment = float(re.search(r"slept ([\d.]+) times per data segment", said).group(1))  # type: ignore[union-attr]
    # each request is one data segment: the figure is the sleeps over the requests, but for the rounding of the
    # bytes' proportion (the replies' bytes are alike; 10% allows for the segments a look split)
    assert per_segment == pytest.approx(slept / (CONNECTIONS * REQUESTS), rel=0.1), said
    assert f"carried {REQUESTS} of them" in said, said
