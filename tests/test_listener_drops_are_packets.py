"""A listener's drops (sk_drops) count handshake packets, not connection attempts, and the reports say so.

The kernel counts a drop each time a listener throws away a SYN (its accept queue full) or the ACK that ends a
handshake, and a client sends its SYN again 1 s, 3 s, 7 s later: 3 connects held past a backlog-1 queue for 3.6 s
read 12 drops. 'the server's listeners dropped 97 connection attempts' (ramp) or '... dropped 626' beside a burst
of 300 clients read as connections lost; they were packets."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from conftest import wait_for
from test_burst_listener_drops import _lines
from test_ramp_listener_drops import _step

from accept_order.experiments.ramp.step_verdict import signals
from accept_order.probes.listeners import listener_drops
from accept_order.render.evidence import counters_text


def test_a_connect_past_a_full_queue_is_dropped_again_with_each_syn() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)  # holds 2; never accepted
        port = listener.getsockname()[1]
        clients = [socket.socket() for _ in range(5)]
        try:
            for client in clients:
                client.setblocking(False)
                try:
                    client.connect(("127.0.0.1", port))
                except BlockingIOError:
                    pass
            beyond = len(clients) - 2
            # each of the 3 beyond the queue sends its SYN again after 1 s: more drops than connects
            wait_for(lambda: listener_drops(port, "127.0.0.1") or 0, lambda n: n > beyond, 30.0, "a SYN sent again")
        finally:
            for client in clients:
                client.close()


def test_ramp_says_packets() -> None:
    seen = "; ".join(signals(_step(listener_drops=97), workers=2, cpus=2))
    assert "the server's listeners dropped 97 handshake packets" in seen, seen
    assert "connection attempt" not in seen, seen


def test_latency_says_packets() -> None:
    evidence: dict[str, Any] = {
        "listener_drops": 147,
        "counters": {"TcpExtListenOverflows": 147},
        "counters_available": True,
        "shared_namespace": True,
    }
    said = counters_text(evidence).plain
    assert said.endswith("; the server's listeners dropped 147 handshake packets)"), said


def test_burst_says_packets(tmp_path: Path) -> None:
    none, some = _lines(tmp_path, [0, 15])  # the golden burst, its counters ListenOverflows +15
    assert "(host-wide; the server's listeners dropped none)" in none, none
    assert "(host-wide; the server's listeners dropped 15 handshake packets)" in some, some
