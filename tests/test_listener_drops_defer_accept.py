"""A listener with TCP_DEFER_ACCEPT drops the ACK that ends each handshake (the connection waits for its first data),
and its sk_drops counts each: 'ramp --server uwsgi -w 4 --rates 500 --step 2s' (uWSGI sets TCP_DEFER_ACCEPT, as
Apache does) said 'overflows 1000' and 'seen: the accept queue overflowed: the server's listeners dropped 1000
handshake packets' of a step of 1,000 connections whose accept queue never held one (max Recv-Q 0, failed 0),
ListenOverflows and ListenDrops +0 (nstat), TCPDeferAcceptDrop +1000. The drops said are now no more than the
namespace's ListenDrops grew (each listen drop counts there and in sk_drops): 0 here, and a real overflow's as
before. Run in a network namespace of its own, so that no other listener's drops move ListenDrops meanwhile."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

UNSHARE = shutil.which("unshare")
IP = shutil.which("ip")
CHILD = """
import json, socket, sys, time
sys.path.insert(0, sys.argv[1])
from dropping_listener import dropped_more, own_drops
from accept_order.probes.listen_drops import dropped_between
from accept_order.probes.listeners import drops_reading

said = {}
with socket.socket() as deferring:
    deferring.setsockopt(socket.IPPROTO_TCP, socket.TCP_DEFER_ACCEPT, 5)
    deferring.bind(("127.0.0.1", 0))
    deferring.listen(64)
    deferring.settimeout(30)
    port = deferring.getsockname()[1]
    was, before = own_drops(deferring), drops_reading(port, "127.0.0.1")
    for _ in range(5):  # as curl does: connect, then send the request at once
        with socket.create_connection(("127.0.0.1", port), timeout=30) as client:
            client.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
            conn, _ = deferring.accept()  # accepted once the data came: the handshake's ACK was dropped before it
            conn.close()
    said["deferred"] = own_drops(deferring) - was, dropped_between(before, drops_reading(port, "127.0.0.1"))
with socket.socket() as full:
    full.bind(("127.0.0.1", 0))
    full.listen(1)
    port = full.getsockname()[1]
    was, before = own_drops(full), drops_reading(port, "127.0.0.1")
    dropped_more(full)
    said["overflowed"] = own_drops(full) - was, dropped_between(before, drops_reading(port, "127.0.0.1"))
print(json.dumps(said))
"""
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or UNSHARE is None or IP is None, reason="needs root, unshare(1) and ip(8)"
)


def test_deferred_acks_are_no_overflows_and_a_full_queue_still_is() -> None:
    assert UNSHARE is not None and IP is not None
    tests = os.path.dirname(__file__)
    script = f'{IP} link set lo up && exec {sys.executable} -c "$0" {tests}'
    done = subprocess.run(
        [UNSHARE, "--net", "sh", "-c", script, CHILD], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout)
    kernel, counted = said["deferred"]
    assert kernel >= 5, "the kernel's own count: each handshake's ACK dropped while the connection waited for data"
    assert counted == 0
    kernel, counted = said["overflowed"]
    assert kernel > 0 and counted == kernel  # every drop of a full queue is a listen drop
