"""The ring each io-uring worker makes holds the completions the latency model's 'first' assumes.

6218f4a's test checked a fresh `uring_api.Ring(entries=ACCEPT_ENTRIES)`, not the worker's: a worker ring made
with other sizes (fewer completions: a smaller ring, or cq_entries passed) passed it, and its real run at -c 140
too (at most 65 per wakeup is under 129, worker 1 still serves), while the model handed connections on at 128.
This reads the ring of the waiter the mode gives a worker.
"""

from __future__ import annotations

import socket

import pytest

from accept_order.core.uring import ACCEPT_COMPLETIONS, ACCEPT_ENTRIES
from accept_order.servers.modes import MODES


def test_the_worker_ring_holds_the_models_completions() -> None:
    if reason := MODES["io-uring"].unavailable():
        pytest.skip(reason)
    from accept_order.servers.modes.io_uring import UringWaiter

    sock = socket.create_server(("127.0.0.1", 0))
    waiter = UringWaiter(sock)
    try:
        assert (waiter.ring.sq_entries, waiter.ring.cq_entries) == (ACCEPT_ENTRIES, ACCEPT_COMPLETIONS)
    finally:
        waiter.leave()  # cancels the armed accept, closes the ring and the listener
    assert sock.fileno() == -1
