"""The kernel's accept counter told the ports it counts (latency --attach --port) counts the accepts on their
listeners alone, and every accept where the workers hold no listener on them (behind NAT: a forwarded port is the one
connected to, never the workers' own). The workers are this process, accepting on two listeners; the witness is its
own count of the connections it accepted on each. The gaps the counter times from an accept to the same thread's next
accept call (what a worker serving one connection at a time spends on it: the latency model's) are told apart too."""

from __future__ import annotations

import os
import socket

import pytest
from test_bpftrace_ignores_sigint import needs_root

from accept_order.probes.accepts import AcceptCounter

ON_A, ON_B = 2, 3


def counted(ports: tuple[int, ...], a: socket.socket, b: socket.socket) -> tuple[int, int]:
    """(The accepts counted, the gaps timed from an accept to the same thread's next accept call.)"""
    me = os.getpid()
    with AcceptCounter([me], ports=ports) as counter:
        counter.start()
        if not counter.attached:
            pytest.skip(f"no kernel count here: {counter.stop().why}")
        for listener, n in ((b, ON_B), (a, ON_A)):
            for _ in range(n):
                with socket.create_connection(listener.getsockname(), timeout=10):
                    conn, _ = listener.accept()  # the counted accept, on this listener
                    conn.close()
        counts = counter.stop()
    assert counts.available and counts.gaps is not None, counts.why
    return counts.counts[me], sum(counts.gaps.values())


@needs_root
def test_only_the_port_s_accepts_and_all_behind_nat() -> None:
    with socket.create_server(("127.0.0.1", 0)) as a, socket.create_server(("127.0.0.1", 0)) as b:
        # the gaps: B, B, B (to A's first call), A; by A only the one after A's first (before: all 4)
        assert counted((a.getsockname()[1],), a, b) == (ON_A, ON_A - 1)  # was ON_A + ON_B: B's too
        with socket.socket() as spare:  # a port none of this process's listeners is on: a forwarded one
            spare.bind(("127.0.0.1", 0))
            forwarded = spare.getsockname()[1]
        assert counted((forwarded,), a, b) == (ON_A + ON_B, ON_A + ON_B - 1)  # every accept, as before
