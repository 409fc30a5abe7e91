"""Review RD of a28bc9c: attached._serving asked who the master feeds over Unix sockets (probes/serving.find_server:
a scan of every process's fd table on the machine, 2.4 s and 0.6 CPU-s a call here beside 400 processes) at every
reading of any master that holds its listener: nginx's, gunicorn's, uWSGI's, each read of a young one's wait. An
`--attach` of an old uWSGI took 2.3-2.8 s where the parent commit took 0.06 s. It is asked only where it can
matter: no child holds the listener (Node's primary under SCHED_RR), or a young child does not hold it yet.

Witness: /proc (the children hold the listener, the process started apart does not)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest
from conftest import child_processes, wait_for

from accept_order.probes.owner import socket_holders
from accept_order.servers import attached_start, attached_workers
from accept_order.servers.registry import HELPERS

TIMEOUT_S = 20.0
HOST = "127.0.0.1"
# a prefork master: two children that accept on the listener it holds, and one that closed it (a helper); the
# master sleeps on its pipe as gunicorn's arbiter does
SERVER = f"""
import os, socket, sys
listener = socket.create_server(("{HOST}", 0))
print(listener.getsockname()[1], flush=True)
for _ in range(2):
    if os.fork() == 0:
        while True:
            listener.accept()[0].close()
if os.fork() == 0:
    listener.close()
    os.read(0, 1)
    os._exit(0)
os.read(0, 1)
"""


@pytest.fixture
def prefork() -> Iterator[tuple[int, int, list[int]]]:
    proc = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        children = wait_for(lambda: [p.pid for p in child_processes(proc.pid)], lambda c: len(c) == 3, TIMEOUT_S, "3")
        yield proc.pid, port, children
    finally:
        proc.kill()
        proc.wait(10)
        for pid in children:
            subprocess.run(["kill", "-9", str(pid)], check=False, capture_output=True)


def test_who_the_master_feeds_is_asked_only_where_it_can_matter(
    prefork: tuple[int, int, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    master, port, children = prefork
    inodes = attached_workers.listener_inodes(HOST, port, [master])
    # /proc: the master and two children hold the listener, once the helper has closed it
    holders = wait_for(lambda: socket_holders(inodes, [master, *children]), lambda h: len(h) == 3, TIMEOUT_S, "closed")
    accepting = [pid for pid in children if pid in holders]
    assert master in holders and len(accepting) == 2

    asked: list[int] = []
    monkeypatch.setattr(attached_workers, "_fed", lambda pid: asked.append(pid) or frozenset())
    monkeypatch.setattr(attached_start, "age_s", lambda pid: attached_start.STARTING_S + 1)  # all started long ago
    assert attached_workers.worker_pids([master], HOST, port, helpers=HELPERS) == accepting
    assert asked == []  # its children hold the listener: nobody need be scanned for

    monkeypatch.setattr(attached_start, "age_s", lambda pid: 0.1)  # the helper may be a worker still starting
    assert attached_workers._serving(master, children, HOST, port, ())[0] == accepting
    assert asked == [master]


def test_a_young_masters_children_are_read_from_the_kernels_lists(
    prefork: tuple[int, int, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A young master's wait reads its children 10 times a second: psutil's children() read every process's stat for
    each (6-15 ms a call beside the suite), most of the wait's CPU (0.16-0.2 CPU-s an attach; 0.07 after)."""
    import psutil

    master, _, children = prefork

    def scan(*args: object, **kwargs: object) -> None:
        raise AssertionError("every process's stat read to find one master's children")

    monkeypatch.setattr(psutil.Process, "children", scan)
    assert attached_start.children_of(master) == children


def test_observe_reads_a_young_master_at_the_attached_pace(monkeypatch: pytest.MonkeyPatch) -> None:
    """observe's wait for a young master read the whole server (every process's fd table) every 50 ms: 20 reads, 0.15
    CPU-s, for a reading that holds its second. It keeps attached_start's pace (10 reads a second)."""
    from accept_order.experiments.observe import server

    watched = server.Watched("pid 1", "x", None, (2,), (server.Unit(2, None),), (80,), (), 2)
    reads: list[int] = []
    monkeypatch.setattr(server, "_find_server", lambda pid, port: reads.append(1) or watched)
    monkeypatch.setattr(attached_start, "age_s", lambda pid: 0.1)
    assert server.find_server(1) is watched
    assert len(reads) <= attached_start.SETTLE_S / 0.1 + 2, len(reads)  # the same reading, held SETTLE_S
