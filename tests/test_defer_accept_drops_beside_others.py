"""A TCP_DEFER_ACCEPT listener's sk_drops counts each handshake-ending ACK it defers, and 5341c96 bounded the server's
drops by the namespace's ListenDrops growth. Beside another program's listener dropping in the same namespace the bound
is theirs: 'ramp --server uwsgi -w 2 --rates 200,400 --step 2s' beside a backlog-1 listener dropping SYNs said
'seen: the accept queue overflowed: the server's listeners dropped 56 handshake packets' and 78 (uWSGI's own: none,
its 1,200 deferred ACKs TCPDeferAcceptDrop's 1,200), and observe read sk_drops unbounded. A listener that defers is
now told by its own socket option, its deferred ACKs taken off with the namespace's TCPDeferAcceptDrop; one that does
not keeps every count. Each case runs in a network namespace of its own (unshare), the other program there too."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest
from conftest import OutputReader, wait_for
from listening_process import NEVER_ACCEPTING, listening

from accept_order.experiments.observe.result import ObserveResult
from accept_order.experiments.observe.run import observe
from accept_order.probes.listen_drops import _defers, defers_accept

UNSHARE, IP, NSENTER = shutil.which("unshare"), shutil.which("ip"), shutil.which("nsenter")
TIMEOUT_S = 30.0
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or None in (UNSHARE, IP, NSENTER), reason="needs root, unshare(1), nsenter(1) and ip(8)"
)
TESTS = os.path.dirname(__file__)

# Both listeners in one process, read with probes/listeners.drops_reading as ramp, burst and latency read them
BOTH = """
import json, socket, sys
sys.path.insert(0, sys.argv[1])
from dropping_listener import dropped_more, own_drops
from accept_order.probes.listeners import drops_reading
from accept_order.probes.listen_drops import dropped_between

deferring, full = socket.socket(), socket.socket()
deferring.setsockopt(socket.IPPROTO_TCP, socket.TCP_DEFER_ACCEPT, 5)
for listener, backlog in ((deferring, 64), (full, 1)):
    listener.bind(("127.0.0.1", 0))
    listener.listen(backlog)
deferring.settimeout(30)
ports = [listener.getsockname()[1] for listener in (deferring, full)]
kernel = [own_drops(listener) for listener in (deferring, full)]
before = [drops_reading(port, "127.0.0.1") for port in ports]
for _ in range(5):  # as curl does: connect, then send the request at once
    with socket.create_connection(("127.0.0.1", ports[0]), timeout=30) as client:
        client.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
        deferring.accept()[0].close()
    dropped_more(full)  # meanwhile another listener of the namespace drops SYNs: ListenDrops grows
said = [dropped_between(b, drops_reading(port, "127.0.0.1")) for b, port in zip(before, ports)]
grown = [own_drops(listener) - k for listener, k in zip((deferring, full), kernel)]
print(json.dumps({"said": said, "kernel": grown}))
"""


def _in_own_namespace(script: str, *args: str) -> list[str]:
    assert UNSHARE is not None and IP is not None
    return [UNSHARE, "--net", "sh", "-c", f'{IP} link set lo up && exec {sys.executable} -c "$0" "$@"', script, *args]


def test_a_deferring_listener_beside_one_that_drops_counts_none_and_the_dropping_one_all() -> None:
    done = subprocess.run(_in_own_namespace(BOTH, TESTS), capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    read = json.loads(done.stdout)
    (deferred, dropped), (said_deferring, said_full) = read["kernel"], read["said"]
    assert deferred >= 5 and dropped >= 5, "the kernel's own counts: 5 deferred ACKs, and SYNs dropped meanwhile"
    assert said_deferring == 0  # 5341c96's bound: min(5, ListenDrops' growth) >= 1
    assert said_full == dropped  # TCPDeferAcceptDrop grew, yet this listener defers nothing: all its drops


# A backlog-1 listener, deferring or no longer: two connections wait for their data in its SYN queue beside one in its
# accept queue, and their data comes: the first fills the queue, the second's finds it full (sk_drops +2, ListenDrops
# +1). 'stopped' turns TCP_DEFER_ACCEPT off once they wait (their handshakes deferred, the listener no longer)
OVERFLOW = """
import json, socket, sys, time
sys.path.insert(0, sys.argv[1])
from dropping_listener import own_drops
from accept_order.probes.listeners import drops_reading
from accept_order.probes.listen_drops import dropped_between, namespace_drops

listener = socket.socket()
listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_DEFER_ACCEPT, 30)
listener.bind(("127.0.0.1", 0))
listener.listen(1)
port = listener.getsockname()[1]
first = socket.create_connection(("127.0.0.1", port), timeout=30)
first.sendall(b"x")
waiting = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(2)]
if sys.argv[2] == "stopped":
    listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_DEFER_ACCEPT, 0)
before, kernel, namespace = drops_reading(port, "127.0.0.1"), own_drops(listener), namespace_drops()
for client in waiting:
    client.sendall(b"x")
deadline = time.monotonic() + 30
while namespace_drops().listen == namespace.listen:  # the second's data, dropped in the kernel's softirq
    assert time.monotonic() < deadline, "no drop in 30 s"
print(json.dumps({"said": dropped_between(before, drops_reading(port, "127.0.0.1")),
                  "kernel": own_drops(listener) - kernel, "listen": namespace_drops().listen - namespace.listen}))
"""


@pytest.mark.parametrize("deferring", ["deferring", "stopped"])
def test_a_segment_finding_the_queue_full_is_one_drop_though_sk_drops_counts_it_twice(deferring: str) -> None:
    done = subprocess.run(
        _in_own_namespace(OVERFLOW, TESTS, deferring), capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    read = json.loads(done.stdout)
    assert read["listen"] == 1 and read["kernel"] == 2, read  # the kernel's own counts, the witness
    assert read["said"] == 1


# observe's server: a deferring listener that accepts; on 'go' it connects to itself 5 times, as curl does
SERVER = """
import socket, sys, threading
listener = socket.socket()
listener.setsockopt(socket.IPPROTO_TCP, socket.TCP_DEFER_ACCEPT, 5)
listener.bind(("127.0.0.1", 0))
listener.listen(64)
port = listener.getsockname()[1]
def serve():
    while True:
        conn = listener.accept()[0]
        conn.recv(100)  # the request read before the close: no reset
        conn.close()
threading.Thread(target=serve, daemon=True).start()
print("port", port, flush=True)
for line in sys.stdin:
    for _ in range(5):
        with socket.create_connection(("127.0.0.1", port), timeout=30) as client:
            client.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
            client.recv(1)
    print("done", flush=True)
"""
# Another program in its namespace (started by a shell that leaves: no kin of the server): a backlog-1 listener that
# never accepts, and on 'go' connects to itself until it has dropped 5 more
OTHER = """
import socket, sys
sys.path.insert(0, sys.argv[1])
from dropping_listener import dropped_more
full = socket.socket()
full.bind(("127.0.0.1", 0))
full.listen(1)
print("ready", flush=True)
for line in sys.stdin:
    for _ in range(5):
        dropped_more(full)
    print("done", flush=True)
"""


def _ss_drops(pid: int) -> dict[int, int]:
    """Each listener's d in `ss -ltm` in the server's namespace, by port: the witness."""
    assert NSENTER is not None
    out = subprocess.run(
        [NSENTER, f"--net=/proc/{pid}/ns/net", "ss", "-ltnmH"], capture_output=True, text=True, check=True
    ).stdout
    drops: dict[int, int] = {}
    for head, skmem in zip(out.splitlines()[::2], out.splitlines()[1::2], strict=False):
        port = int(head.split()[3].rsplit(":", 1)[1])
        drops[port] = int(skmem.split(",d")[1].rstrip(")"))
    return drops


@pytest.fixture
def beside() -> Iterator[tuple[subprocess.Popen[str], OutputReader, int, subprocess.Popen[str], OutputReader]]:
    assert NSENTER is not None
    server = subprocess.Popen(_in_own_namespace(SERVER), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    other: subprocess.Popen[str] | None = None
    orphan: int | None = None
    try:
        assert server.stdout is not None
        heard = OutputReader(server.stdout)
        port = int(heard.wait_for(r"port (\d+)\n", TIMEOUT_S).group(1))
        # the stdin kept (sh gives a child in the background /dev/null): it leaves when this test's end closes it
        shell = f'exec 3<&0; {NSENTER} --net=/proc/{server.pid}/ns/net {sys.executable} -c "$0" "$1" <&3 & echo pid $!'
        other = subprocess.Popen(
            ["sh", "-c", shell, OTHER, TESTS], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert other.stdout is not None
        told = OutputReader(other.stdout)
        orphan = int(told.wait_for(r"pid (\d+)\n", TIMEOUT_S).group(1))
        told.wait_for(r"ready\n", TIMEOUT_S)
        yield server, heard, port, other, told
    finally:
        for proc in (server, other):
            if proc is not None and proc.stdin is not None:
                proc.stdin.close()  # each reads its stdin to its end, and leaves (the other's shell has left)
        server.wait(TIMEOUT_S)
        if other is not None:
            other.wait(TIMEOUT_S)
        if orphan is not None:
            wait_for(lambda: os.path.exists(f"/proc/{orphan}"), lambda alive: not alive, TIMEOUT_S, "the other's end")


def test_observe_of_a_deferring_server_beside_another_dropping_says_none(
    beside: tuple[subprocess.Popen[str], OutputReader, int, subprocess.Popen[str], OutputReader],
) -> None:
    server, heard, port, other, told = beside
    until, went = threading.Event(), []

    def started(_: ObserveResult) -> None:
        if not went:  # the first snapshot comes after the start's readings: every drop from here is counted
            went.append(True)
            for proc in (server, other):
                assert proc.stdin is not None
                proc.stdin.write("go\n")
                proc.stdin.flush()

    def finished() -> None:
        wait_for(lambda: went, bool, TIMEOUT_S, "the first snapshot")
        heard.wait_for(r"done\n", TIMEOUT_S)
        told.wait_for(r"done\n", TIMEOUT_S)
        until.set()

    was = _ss_drops(server.pid)
    waiter = threading.Thread(target=finished)
    waiter.start()
    made = observe(pid=server.pid, duration_s=60.0, interval_s=0.1, trace=False, on_snapshot=started, until=until)
    waiter.join(TIMEOUT_S)
    now = _ss_drops(server.pid)
    theirs = {p: now[p] - was.get(p, 0) for p in now if p != port}
    assert now[port] - was[port] >= 5, "the server's listener's d grew by its 5 deferred ACKs"
    assert sum(theirs.values()) >= 5, "the other program's listener dropped meanwhile"
    assert made.listener_drops == 0, (made.listener_drops, now, was)


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def test_a_listeners_deferral_is_read_from_its_own_descriptor_and_no_other() -> None:
    with socket.socket() as deferring, socket.socket() as plain:
        deferring.setsockopt(socket.IPPROTO_TCP, socket.TCP_DEFER_ACCEPT, 5)
        for listener in (deferring, plain):
            listener.bind(("127.0.0.1", 0))
            listener.listen(8)
        inodes = [os.fstat(listener.fileno()).st_ino for listener in (deferring, plain)]
        was = _open_fds()
        assert defers_accept({inodes[0]}, (os.getpid(),)) is True
        assert defers_accept({inodes[1]}, (os.getpid(),)) is False
        assert defers_accept(set(inodes), (os.getpid(),)) is True
        # the descriptor's number taken by another socket since its fd table was read: not read as that one
        assert _defers(os.getpid(), plain.fileno(), inodes[0]) is None
        assert _open_fds() == was  # every copy closed


def test_observe_reads_its_counters_around_the_server_drops(monkeypatch: pytest.MonkeyPatch) -> None:
    """The verdict bounds the server's drops by ListenDrops' growth over observe's counters (verdict._own_drops): a
    drop between the end's counters and the end's drops would read as 'more than the namespace's ListenDrops', 'not a
    full queue's'. So the counters are read first at the start, last at the end."""
    import accept_order.experiments.observe.observer as observer

    read: list[str] = []
    counters, drops = observer.counters, observer.drops_reading
    monkeypatch.setattr(observer, "counters", lambda *a: (read.append("counters"), counters(*a))[1])
    monkeypatch.setattr(observer, "drops_reading", lambda *a: (read.append("drops"), drops(*a))[1])
    with listening(NEVER_ACCEPTING) as (pid, _):  # observe's server for the reading order
        until = threading.Event()  # set at the first snapshot: observe ends there

        def stop(_: ObserveResult) -> None:
            until.set()

        observe(pid=pid, duration_s=60.0, interval_s=0.1, trace=False, on_snapshot=stop, until=until)
    assert "drops" in read and read.index("counters") < read.index("drops")  # the start: counters, then drops
    assert read[-1] == "counters" and read[-2] == "drops", read[-4:]  # the end: drops, then counters
