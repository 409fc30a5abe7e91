"""observe's accepts and its load end together, so that two lines of one report count the same connections.

nginx (2 workers, keepalive_requests 100) under `wrk -t1 -c8`, observed 6 s while wrk ran on past the end, read
'1,386 of 1,457 connections opened and closed between two samples' (the accepts less those a look saw held) and
'1,492 connections opened and closed between two looks' (the kernel's announcements of closes) in one report; 5 runs
106 to 158 apart. Two causes, one at each count's end:

- bpftrace, stopped by SIGINT, detaches its probes before its END block (~0.3 s here) and counts some accepts
  meanwhile; the load's last look came after its exit. AcceptWatch.freeze now ends the count at a call observe makes
  right before that look (an unknown policy's sched_get_priority_max, which the program takes for its flag), and
  begin() starts it right before the first look (the probes attach 2-10 ms before it: an accept between, counted and
  seen open at the first look, read as a connection no look saw).
- the reader of the close announcements reads in batches (tcp_destroy.PACE_S apart), so at the end the closes of its
  last ~50 ms were queued, read by no one: with the freeze alone, 5 runs read 10 to 67 fewer closes than connections.
  DestroyWatch.held() stops the reader and reads what is queued.

With both, 4 runs of the same load: 0, 0, 0 and 2 apart (a close read by settle ms after the look); nginx's access log
($msec, $connection) put each run's connections opened in the window at the accepts' count, less wrk's connection that
sends no request."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys

import pytest
from conftest import wait_for
from test_observe_close_budget import _announced, _close, _connect, listener  # noqa: F401 (a fixture)

from accept_order.probes import tcp_destroy
from accept_order.probes.accept_watch import AcceptWatch
from accept_order.probes.tcp_destroy import DestroyWatch

TIMEOUT_S = 30.0

# accepts and holds each connection, and says so (one line each) once it has
SERVER = """
import socket, sys
listening = socket.socket()
listening.bind(("127.0.0.1", 0))
listening.listen(64)
print(listening.getsockname()[1], flush=True)
held = []
while True:
    held.append(listening.accept()[0])
    print("accepted", flush=True)
"""


def test_held_reads_the_closes_the_reader_left_queued(
    listener: socket.socket,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reader reads one close, then waits past the test's end (its pace made an hour); 20 more closes are queued
    for it (the witness, a second watch, has read them: the kernel hands each one to both). held() reads them: each
    one no look knows is counted, as observe's settle counts the closes of its window."""
    monkeypatch.setattr(tcp_destroy, "PACE_S", 3600.0)
    port = listener.getsockname()[1]
    witness, watch = DestroyWatch([port]), DestroyWatch([port])
    watch.start()
    try:
        _close(_connect(listener, [b"a"]))
        _announced(witness, 1)
        wait_for(lambda: watch.read, lambda n: n >= 1, TIMEOUT_S, "the reader's first read")  # it waits an hour now
        watch.known = frozenset()  # a look that knows none of them: counted, not decoded
        _close(_connect(listener, [b"b"] * 20))
        _announced(witness, 20)  # queued for the watch too
        unseen, _ = watch.held()
        assert watch.read == 1 and len(watch.take()) == 1, "the reader read the first close only"
    finally:
        watch.close()
        witness.close()
    assert unseen == 20


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("bpftrace") is None, reason="bpftrace runs as root only")
def test_only_the_accepts_between_begin_and_freeze_are_counted() -> None:
    """A gated watch (observe's): 2 connections accepted before begin(), 3 between it and freeze(), 4 after: the
    server's own lines say 9, the count 3, and it counts up to the freeze (`ended`), not to bpftrace's END."""
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True)
    watch = AcceptWatch([server.pid], gated=True)
    clients: list[socket.socket] = []
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        watch.start()
        assert watch.attached, watch.stop().why

        def accepted(count: int) -> None:
            for _ in range(count):
                clients.append(socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S))
                assert server.stdout is not None and server.stdout.readline() == "accepted\n"

        accepted(2)
        watch.begin()
        accepted(3)
        watch.freeze()
        accepted(4)
        totals, counts = watch.finish()
    finally:
        watch.close()
        for client in clients:
            client.close()
        server.kill()
        server.wait(TIMEOUT_S)
    assert counts.available, counts.why
    assert totals.of(server.pid)[0] == 3
    assert watch.frozen_at is not None and watch.ended == watch.frozen_at
