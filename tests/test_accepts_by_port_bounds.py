"""The accept counter's ports (latency --attach --port), where telling them apart is not needed or not possible.

A server of one port (the common case) runs the counting program as it did before ports were told apart: no map
update per accept call, no begin mark (bpftrace's CPU 0.61-0.62 s against 0.50-0.54 for 4,000 accepts at Debian's
nginx, before the program was chosen by the ports the workers hold). The workers here are child processes holding
one listener, or two.

Where the workers listen on other ports too, the counts and gaps by descriptor are bumped beside their totals in the
same probe; a map that filled (bpftrace keeps 4,096 keys and drops the rest without a word) leaves their sums short.
64 prefork workers serving two ports filled @gapon, and 8,123 gaps were given for 4,800 accepts on A. What it lost
cannot be placed by port: the gaps are then none, the counts every port's, each said. The listeners are this
process's; the maps are bpftrace's END lines as parse_descriptors reads them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from test_bpftrace_ignores_sigint import needs_root

from accept_order.probes.accept_ports import NO_PORT, ListenerPorts, own_port_totals
from accept_order.probes.accept_program import program
from accept_order.probes.accepts import AcceptCounter

IO_TIMEOUT_S = 10.0

HOLDER = """
import socket, sys
held = [socket.create_server(("127.0.0.1", 0)) for _ in range(int(sys.argv[1]))]
print(*(s.getsockname()[1] for s in held), flush=True)
sys.stdin.readline()
"""


@contextmanager
def holder(listeners: int) -> Iterator[tuple[int, list[int]]]:
    """A child process holding `listeners` listeners: (its pid, their ports), until the block ends."""
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(listeners)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        ports = [int(p) for p in child.stdout.readline().split()]  # printed once they listen
        assert len(ports) == listeners
        yield child.pid, ports
    finally:
        child.kill()
        child.wait(IO_TIMEOUT_S)


def test_one_port_runs_the_program_as_before() -> None:
    with holder(1) as (pid, ports):
        assert AcceptCounter([pid], ports=ports).program() == program([pid])
    with holder(2) as (pid, ports):  # two ports: each accept kept by the descriptor it was asked of
        assert AcceptCounter([pid], ports=ports[:1]).program() == program([pid], descriptors=True)


def test_a_full_map_is_said_not_misplaced() -> None:
    me = os.getpid()
    with socket.create_server(("127.0.0.1", 0)) as a, socket.create_server(("127.0.0.1", 0)) as b:
        port_a, port_b = a.getsockname()[1], b.getsockname()[1]
        fd_a, fd_b = a.fileno() + 1, b.fileno() + 1  # as the program keys them
        counts, empty, gaps = {me: 5}, {me: 1}, {10: 2, 200: 2}  # 2 accepts on A, 3 on B; 4 gaps
        took, found = {(me, fd_a): 2, (me, fd_b): 3}, {(me, fd_b): 1}
        gaps_on = {(10, me, fd_a): 1, (10, me, fd_b): 1, (200, me, fd_b): 2}
        whole = own_port_totals(counts, empty, gaps, (took, found, gaps_on), (port_a,), ListenerPorts(me), (port_b,))
        assert whole == ({me: 2}, {me: 0}, {10: 1}, [])  # every key kept: A's alone
        del gaps_on[(200, me, fd_b)]  # the map filled: 2 of the gaps after B's connections lost
        counted, left, timed, notes = own_port_totals(
            counts, empty, gaps, (took, found, gaps_on), (port_a,), ListenerPorts(me), (port_b,)
        )
        assert (counted, left, timed) == ({me: 2}, {me: 0}, None)  # not {10: 1, 200: 2}: B's service as A's
        assert len(notes) == 1 and "the gaps from each accept" in notes[0] and "2 of 4 kept" in notes[0], notes
        assert str(port_b) in notes[0].rpartition("to port ")[2], notes
        del took[(me, fd_b)]  # the accepts' map filled: B's 3 not placed
        counted, left, _, notes = own_port_totals(
            counts, empty, gaps, (took, found, gaps_on), (port_a,), ListenerPorts(me), (port_b,)
        )
        assert (counted, left) == ({me: 5}, {me: 1})  # every port's, as 5 - 0 would read as A's alone...
        assert notes[0].startswith("it counts the accepts on every port the workers listen on"), notes  # ... said
        assert str(port_b) in notes[0].partition(" too:")[0], notes


def test_a_unix_listener_is_no_port_s() -> None:
    """HAProxy's threads accept on its stats socket too: 20 'show info' asks of it beside 10 requests to frontend A
    read 30 accepts for observe --port A, which its note called A's alone."""
    me = os.getpid()
    with socket.create_server(("127.0.0.1", 0)) as a, socket.socket(socket.AF_UNIX) as stats:
        stats.bind("\0accept-order-test-stats-" + str(me))  # abstract: nothing on disk
        stats.listen()
        with socket.create_connection(a.getsockname(), timeout=IO_TIMEOUT_S) as client:
            listeners = ListenerPorts(me)
            assert listeners.port(me, stats.fileno()) == NO_PORT  # was None: counted as A's
            assert listeners.port(me, a.fileno()) == a.getsockname()[1]
            assert listeners.port(me, client.fileno()) is None  # a connection: no listener, not known
            on = {(me, me, stats.fileno() + 1): 20, (me, me, a.fileno() + 1): 10}
            assert listeners.elsewhere(on, (a.getsockname()[1],)) == {(me, me, stats.fileno() + 1): 20}


GONE = """
import socket, sys
a, b = socket.create_server(("127.0.0.1", 0)), socket.create_server(("127.0.0.1", 0))
print(a.getsockname()[1], b.getsockname()[1], flush=True)
sys.stdin.readline()  # the counter is attached
for listener, n in ((b, 3), (a, 2)):
    for _ in range(n):
        listener.accept()[0].close()
"""


@needs_root
def test_a_worker_gone_before_the_count_is_placed_by_port() -> None:
    """A worker that exits before the counter stops (a reload's old one, a recycled one) has its accepts placed by
    the listeners its fd table held as the counter started: read at the stop, its table is gone, and its 3 accepts on
    B were counted as A's (5)."""
    child = subprocess.Popen([sys.executable, "-c", GONE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdin is not None and child.stdout is not None
        port_a, port_b = (int(p) for p in child.stdout.readline().split())
        with AcceptCounter([child.pid], ports=(port_a,)) as counter:
            counter.start()
            if not counter.attached:
                pytest.skip(f"no kernel count here: {counter.stop().why}")
            child.stdin.write("go\n")
            child.stdin.flush()
            for port in (port_b,) * 3 + (port_a,) * 2:
                with socket.create_connection(("127.0.0.1", port), timeout=IO_TIMEOUT_S) as client:
                    assert client.recv(1) == b""  # accepted and closed by the child
            assert child.wait(IO_TIMEOUT_S) == 0  # gone before the stop
            counts = counter.stop()
        assert counts.available, counts.why
        assert counts.counts[child.pid] == 2, counts  # A's alone (was 5)
    finally:
        child.kill()
        child.wait(IO_TIMEOUT_S)
