"""observe counts each connection's bytes to its close: the kernel's announcements of destroyed TCP sockets
(probes/tcp_destroy.py, sock_diag's SKNLGRP_INET_TCP_DESTROY) differenced against each socket's last look
(experiments/observe/load.py).

The acceptance check: a hand-started Debian nginx (2 workers, keep-alive, a log of `$pid $connection
$request_length`) under wrk -c6 for a few seconds, observed from before wrk starts to after it ends: the byte
shares are the log's (within 2 points) and the total is the bytes nginx read (what the log says, plus at most
one per connection: the kernel counts a FIN received as one byte). Without the announcements the same case
gave 61-90% of the bytes here. Then the probe on made-up messages and on the kernel's own (its buffer overflowing:
ENOBUFS counted, never fatal; any user may join), and the sampler's rules on announcements made by hand."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import wait_for
from nginx_by_hand import nginx_by_hand

from accept_order.api import observe
from accept_order.experiments.observe import load as load_module
from accept_order.experiments.observe.result import ObserveResult
from accept_order.experiments.observe.server import Unit, Watched
from accept_order.experiments.observe.verdict import verdict
from accept_order.probes import tcp_destroy
from accept_order.probes.tcp_destroy import DestroyWatch
from accept_order.probes.tcp_info import TcpSocket

TIMEOUT_S = 30.0
WORKERS = 2
WRK_CONNECTIONS = 6

NGINX_CONF = """daemon off;
master_process on;
worker_processes {workers};
pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 256; }}
http {{
    log_format sizes '$pid $connection $request_length';
    access_log {d}/access.log sizes;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d};
    uwsgi_temp_path {d}; scgi_temp_path {d};
    server {{ listen 127.0.0.1:{port}; location / {{ return 200 "ok\\n"; }} }}
}}
"""


@pytest.fixture
def sized_nginx(free_port: int) -> Iterator[tuple[int, list[int], Path]]:
    """(port, worker pids, access log) of nginx started by hand, logging each request's length."""
    with nginx_by_hand(NGINX_CONF, free_port, WORKERS, TIMEOUT_S, "accept-order-test-closes-") as nginx:
        yield nginx.port, nginx.workers, nginx.access_log


def test_wrk_bytes_are_counted_to_each_close_against_nginxs_log(sized_nginx: tuple[int, list[int], Path]) -> None:
    """wrk -c6 while observe looks about once a second, stopped once two looks have seen all six connections
    held: every connection then closes busy after its last look (however far apart the looks are on a busy
    machine). Each one's tail comes from the kernel's announcement, so the byte shares are the log's
    request-length shares and the total is what nginx read."""
    if shutil.which("wrk") is None:
        pytest.skip("wrk is not installed")
    port, pids, log = sized_nginx
    until = threading.Event()
    errors: list[BaseException] = []
    started: list[subprocess.Popen[bytes]] = []
    full_looks = [0]  # intervals whose look saw every one of wrk's connections held

    def client() -> None:
        try:
            wrk = subprocess.Popen(
                ["wrk", "-t", "1", "-c", str(WRK_CONNECTIONS), "-d", f"{int(TIMEOUT_S)}s", f"http://127.0.0.1:{port}/"],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            started.append(wrk)
            wrk.wait(TIMEOUT_S + 5)
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            errors.append(exc)
        finally:
            until.set()

    driver = threading.Thread(target=client)

    def snapshot(result: ObserveResult) -> None:  # the first one comes after the first look: wrk starts then
        if not driver.is_alive() and not until.is_set():
            driver.start()
        elif result.intervals and sum(result.intervals[-1].held) >= WRK_CONNECTIONS:
            full_looks[0] += 1
            if full_looks[0] == 2 and started:  # bytes carried between two looks: now stop wrk (its SIGINT)
                started[0].send_signal(signal.SIGINT)

    try:
        result = observe(port=port, duration_s=TIMEOUT_S, trace=False, on_snapshot=snapshot, until=until)
    finally:
        for wrk in started:
            if wrk.poll() is None:
                wrk.kill()
        driver.join(TIMEOUT_S)
    assert full_looks[0] >= 2, f"no two looks saw wrk's {WRK_CONNECTIONS} connections in {TIMEOUT_S:g} s"
    assert not errors, errors
    lines = [line.split() for line in log.read_text().splitlines() if line.strip()]
    by_pid: Counter[int] = Counter()
    for fields in lines:
        by_pid[int(fields[0])] += int(fields[2])
    logged, connections = sum(by_pid.values()), len({(fields[0], fields[1]) for fields in lines})
    counted = {w.pid: w.bytes_in or 0 for w in result.workers}
    total, apart = sum(counted.values()), result.closed_unlooked_bytes_in or 0
    # wrk connects once before its run to check the address (wrk.resolve), sends nothing and closes: a look may
    # have seen it (a close counted to its worker) or not (closed before any look, its worker not known): it
    # carries at most its FIN's byte either way
    closes = (result.closes_counted or 0) + (result.closed_unlooked or 0)
    assert closes in (connections, connections + 1) and result.closed_busy == 0, result  # every tail announced
    assert result.closes_lost == 0 and (result.closed_unlooked or 0) <= 1 and apart <= 1, result
    # the total is what nginx read: its requests, and one byte per FIN received (at most one per connection)
    assert logged <= total + apart <= logged + closes, (total, apart, logged, connections, result)
    for pid in pids:
        assert abs(counted[pid] / total - by_pid[pid] / logged) <= 0.02, (counted, by_pid, result)
    assert sum(sum(i.bytes_in) for i in result.intervals) == total  # the last interval has the tails
    said = verdict(result)
    assert not any("closed between two looks while busy" in line or "may be theirs" in line for line in said), said
    assert "connections closed while observed: each one's bytes are counted to its close" in "\n".join(said)


def test_the_verdict_says_what_the_announcements_gave() -> None:
    from test_observe_load import result_with

    result = result_with(
        [25, 25, 25, 25],
        [1, 1, 1, 1],
        [100, 100, 100, 700],
        closes_counted=30,
        closes_lost=4,
        closed_unlooked=20,
        closed_unlooked_bytes_in=1000,
    )
    said = verdict(result)
    assert (
        "30 connections closed while observed: each one's bytes are counted to its close (the kernel announces "
        "each socket it frees with its final counters)" in said
    )
    assert (
        "20 connections opened and closed between two looks: the 1,000 bytes they received (50% of all) are "
        "counted but in no worker's share (an announcement does not say which process held the socket); the kernel "
        "counts a FIN received as a byte, so 20 of them may be closes, not data" in said
    )
    assert (
        "the kernel dropped 4 announcements of a close (the buffer was full): those connections' bytes after "
        "their last look are not counted" in said
    )
    one = verdict(replace(result, closed_unlooked=1, closed_unlooked_bytes_in=1))
    assert any(
        "1 connection opened and closed between two looks: the 1 byte it received (0% of all) is counted but" in line
        for line in one
    )
    before = verdict(replace(result, closes_counted=None, closes_lost=None, closed_unlooked=None))
    assert not any("announce" in line for line in before)  # a file from before them: as it was
    again = ObserveResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again == result  # saved and read back


# -- the probe, on messages made by hand -------------------------------------------------------------------


def announcement(cookie: int, port: int, received: int, acked: int, segs_in: int, segs_out: int) -> bytes:
    """One message as the kernel sends it when it frees a TCP socket (Linux 6.18: 380 bytes): nlmsghdr,
    inet_diag_msg (closed, inode 0), INET_DIAG_PROTOCOL, INET_DIAG_INFO with a 284-byte tcp_info."""
    info = bytearray(284)
    struct.pack_into("=I", info, 52, 7)  # tcpi_last_data_recv
    struct.pack_into("=QQ", info, 120, acked, received)
    struct.pack_into("=II", info, 152, segs_in, segs_out)
    loopback = socket.inet_aton("127.0.0.1") + bytes(12)
    msg = struct.pack("=BBBB", socket.AF_INET, 7, 0, 0)
    msg += struct.pack("!HH", port, 50_000) + loopback + loopback
    msg += struct.pack("=III", 0, cookie & 0xFFFFFFFF, cookie >> 32) + struct.pack("=IIIII", 0, 0, 0, 0, 0)
    attrs = struct.pack("=HHB3x", 5, 10, socket.IPPROTO_TCP) + struct.pack("=HH", 4 + len(info), 2) + bytes(info)
    body = msg + attrs
    return struct.pack("=IHHII", 16 + len(body), 20, 0, 0, 0) + body


class Scripted:
    """A netlink socket's reads, scripted: messages, or an error (ENOBUFS), then nothing (EAGAIN)."""

    def __init__(self, reads: list[bytes | OSError]) -> None:
        self.reads = reads

    def recv_into(self, buffer: bytearray) -> int:
        if not self.reads:
            raise BlockingIOError(errno.EAGAIN, "nothing")
        item = self.reads.pop(0)
        if isinstance(item, OSError):
            raise item
        buffer[: len(item)] = item
        return len(item)

    def getsockopt(self, *args: object) -> bytes:
        raise OSError(errno.ENOPROTOOPT, "scripted")

    def fileno(self) -> int:
        return -1

    def close(self) -> None:
        pass


def test_made_up_announcements_are_decoded_filtered_by_port_and_enobufs_is_counted() -> None:
    watch = DestroyWatch([8080])
    watch.sock.close()
    watch.sock = Scripted(  # type: ignore[assignment]
        [
            announcement(1 << 40 | 5, 8080, 1200, 3400, 12, 13),
            OSError(errno.ENOBUFS, "No buffer space available"),  # some were dropped: the rest still come
            announcement(6, 9999, 1, 1, 1, 1),  # another port's: not the server's
            announcement(7, 8080, 10, 20, 1, 2),
        ]
    )
    try:
        assert watch.drain() == 2 and watch.read == 2 and watch.overflows == 1
        assert watch.take() == [
            TcpSocket(1 << 40 | 5, 0, 7, 8080, 1200, 3400, 12, 13, 7),
            TcpSocket(7, 0, 7, 8080, 10, 20, 1, 2, 7),
        ]
        assert watch.take() == [] and watch.dropped == 0  # handed over once; the kernel's count unknown here
    finally:
        watch.close()


def test_the_port_filter_is_a_program_the_kernel_runs() -> None:
    code = tcp_destroy.port_filter([80, 8080])
    ops = [struct.unpack_from("=HBBI", code, at) for at in range(0, len(code), 8)]
    assert ops == [(0x28, 0, 0, 20), (0x15, 2, 0, 80), (0x15, 1, 0, 8080), (0x06, 0, 0, 0), (0x06, 0, 0, 0xFFFFFFFF)]


# -- the probe, on the kernel's own ------------------------------------------------------------------------


def _closes(listener: socket.socket, count: int, payload: bytes) -> None:
    port = listener.getsockname()[1]
    for _ in range(count):
        with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as client:
            server, _ = listener.accept()
            client.sendall(payload)
            assert server.recv(len(payload), socket.MSG_WAITALL) == payload
            server.close()


def test_the_kernel_announces_each_close_with_its_final_counters() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        watch = DestroyWatch([listener.getsockname()[1]])
        try:
            assert watch.filtered  # the clients' sockets (other ports) stay in the kernel
            _closes(listener, 3, b"x" * 1000)
            closed: list[TcpSocket] = []

            def announced() -> int:
                watch.drain()
                closed.extend(watch.take())
                return len(closed)

            wait_for(announced, lambda n: n >= 3, TIMEOUT_S, "3 closes announced")
        finally:
            watch.close()
    assert len(closed) == 3 and all(s.inode == 0 and s.state == 7 for s in closed)
    # the data, and one more where the client's FIN came before the socket was freed: the kernel counts it as
    # a byte received (rcv_nxt moves over it); an orphan reaching FIN_WAIT2 is freed before it (a timewait
    # socket waits for the FIN instead)
    assert all(s.bytes_received in (1000, 1001) for s in closed), closed
    assert [s.data_segs_in for s in closed] == [1] * 3


def test_an_overflowing_buffer_is_counted_not_fatal() -> None:
    """A buffer of a few messages, not read while 60 closes come: the kernel drops the rest, counts them and
    says ENOBUFS once; what was kept and what was dropped add up to the closes."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        watch = DestroyWatch([listener.getsockname()[1]], rcvbuf=4096)
        try:
            _closes(listener, 60, b"y")
            read = wait_for(
                lambda: watch.drain() + watch.read, lambda _: watch.read + watch.dropped >= 60, TIMEOUT_S, "60 closes"
            )
            assert watch.overflows >= 1 and watch.dropped > 0, (read, watch.overflows, watch.dropped)
            assert watch.read + watch.dropped == 60
            _closes(listener, 2, b"z")  # and it goes on
            wait_for(
                lambda: watch.drain() + watch.read, lambda _: watch.read + watch.dropped == 62, TIMEOUT_S, "2 more"
            )
        finally:
            watch.close()


def test_any_user_may_join() -> None:
    """net/core/sock_diag.c opens the groups to every user (NL_CFG_F_NONROOT_RECV): `nobody` joins here and
    is told of a close. (Reading another user's fd tables or entering another namespace still needs root.)"""
    if os.geteuid() != 0 or shutil.which("setpriv") is None or not os.access("/usr/bin/python3", os.X_OK):
        pytest.skip("needs root, setpriv and /usr/bin/python3 to run a probe as nobody")
    src = Path(__file__).resolve().parent.parent / "src"
    script = (
        "import socket, sys\n"
        f"sys.path.insert(0, {str(src)!r})\n"
        "from accept_order.probes.tcp_destroy import DestroyWatch\n"
        "listener = socket.socket(); listener.bind(('127.0.0.1', 0)); listener.listen()\n"
        "watch = DestroyWatch([listener.getsockname()[1]])\n"
        "client = socket.create_connection(listener.getsockname()); server, _ = listener.accept()\n"
        "client.sendall(b'abc'); server.recv(3); server.close(); client.close()\n"
        "import select\n"
        "while not watch.read and select.select([watch.sock], [], [], 10)[0]:\n"
        "    watch.drain()\n"
        "print(watch.read, watch.take()[0].bytes_received)\n"
    )
    done = subprocess.run(
        ["setpriv", "--reuid", "nobody", "--regid", "nogroup", "--clear-groups", "/usr/bin/python3", "-c", script],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd="/",
    )
    if "No module named" in done.stderr:
        pytest.skip(f"the package does not import in /usr/bin/python3: {done.stderr.strip().splitlines()[-1]}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "4"]  # 3 bytes and the FIN


# -- the sampler's rules, on announcements made by hand ----------------------------------------------------


Look = tuple[list[TcpSocket], dict[int, set[int]]]  # a dump's sockets, and each worker's socket inodes


class Announced:
    """DestroyWatch's place in load.py, scripted: each take() hands the next list."""

    script: list[list[TcpSocket]] = []
    lost = skipped = unseen = unseen_bytes_in = 0  # every announcement decoded and read
    known: object = None

    def __init__(self, ports: object, netns_pid: object = None) -> None:
        self.closed = False

    def start(self) -> None:
        pass

    def held(self) -> tuple[int, int]:
        return self.unseen, self.unseen_bytes_in

    def take(self) -> list[TcpSocket]:
        return Announced.script.pop(0) if Announced.script else []

    def close(self) -> None:
        self.closed = True


def sock(cookie: int, inode: int, received: int, recv_ms: int = 1) -> TcpSocket:
    return TcpSocket(cookie, inode, 1, 8080, received, 2 * received, received // 10, received // 10, recv_ms)


def closed(cookie: int, received: int) -> TcpSocket:
    return TcpSocket(cookie, 0, 7, 8080, received, 2 * received, received // 10, received // 10, 3)


def sampler_over(
    monkeypatch: pytest.MonkeyPatch,
    looks: list[Look],
    announced: list[list[TcpSocket]],
    workers: tuple[int, ...] = (100, 200),
    watch: object = Announced,
) -> load_module.LoadSampler:
    """A LoadSampler whose looks and announcements are these (announced[i]: taken at look i; one more list:
    taken when it settles), read through `watch` in DestroyWatch's place."""
    step = iter(looks)
    current: list[Look] = []

    def dump(ports: object, netns_pid: object = None) -> list[TcpSocket]:
        current[:] = [next(step)]
        return current[0][0]

    monkeypatch.setattr(load_module, "server_sockets", dump)
    monkeypatch.setattr(load_module, "socket_inodes", lambda pid: current[0][1][pid])
    monkeypatch.setattr(load_module, "DestroyWatch", watch)
    monkeypatch.setattr(load_module, "SETTLE_S", 0.05)
    Announced.script = [list(a) for a in announced]
    watched = Watched("port 8080", "x", None, workers, tuple(Unit(p) for p in workers), (8080,), (), 100)
    sampler = load_module.LoadSampler(watched)
    sampler.open_closes()
    for _ in looks:
        sampler.sample()
    sampler.settle()
    return sampler


def test_a_close_is_counted_from_its_last_look_to_its_end_for_its_holder(monkeypatch: pytest.MonkeyPatch) -> None:
    looks: list[Look] = [
        ([sock(1, 11, 1000), sock(2, 22, 50)], {100: {11}, 200: {22}}),  # the start
        ([sock(1, 11, 1300), sock(2, 22, 80)], {100: {11}, 200: {22}}),
        ([sock(2, 22, 90)], {100: set(), 200: {22}}),  # 1 closed, announced at the next look
        ([sock(2, 0, 95)], {100: set(), 200: set()}),  # 2 left its worker's fd table (closing)
        ([], {100: set(), 200: set()}),  # 2 gone from the tables, not yet announced
    ]
    announced = [
        [closed(99, 500)],  # before the first look: a close before the window, dropped
        [],
        [],
        [closed(1, 1900)],  # 1's tail after its last look (1300): 600, to pid 100
        [],
        [],  # the sampler settles: 2's announcement is not in yet ...
        [closed(2, 120)],  # ... and comes while it waits: 2's tail after 90, to pid 200, its last holder
    ]
    sampler = sampler_over(monkeypatch, looks, announced)
    first, second = sampler.carried[100], sampler.carried[200]
    assert (first.bytes_in, first.bytes_out, first.segments_in) == (900, 1800, 90)  # from 1000 to 1900
    assert second.bytes_in == 70  # from 50 to 120: its last look saw 95 but no holder; the close is its own
    assert (sampler.closes_counted, sampler.closed_busy, sampler.closed_unlooked) == (2, 0, 0)
    summary = sampler.summary()
    assert summary["closes_counted"] == 2 and summary["closes_lost"] == 0 and summary["closed_busy"] == 0


def test_a_close_no_look_saw_goes_to_the_one_worker_or_to_no_one(monkeypatch: pytest.MonkeyPatch) -> None:
    looks: list[Look] = [([], {100: set(), 200: set()}), ([], {100: set(), 200: set()})]
    announced = [[], [closed(5, 400), closed(6, 40)]]  # opened and closed between the two looks
    two = sampler_over(monkeypatch, looks, announced)
    assert (two.closed_unlooked, two.closed_unlooked_bytes_in, two.closes_counted) == (2, 440, 0)
    assert two.carried[100].bytes_in == two.carried[200].bytes_in == 0
    one = sampler_over(monkeypatch, [([], {100: set()}), ([], {100: set()})], announced, workers=(100,))
    assert (one.closed_unlooked, one.closes_counted, one.carried[100].bytes_in) == (0, 2, 440)


def test_what_is_never_announced_or_zeroed_is_a_tail_not_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    looks: list[Look] = [
        ([sock(1, 11, 100), sock(2, 22, 100)], {100: {11}, 200: {22}}),
        ([sock(1, 11, 300), sock(2, 22, 300)], {100: {11}, 200: {22}}),  # both busy
        ([], {100: set(), 200: set()}),  # both closed
    ]
    announced = [[], [], [closed(2, 0)], []]  # 2 aborted (SO_LINGER 0 zeroes the counters); 1 never announced
    sampler = sampler_over(monkeypatch, looks, announced)
    assert (sampler.closed_busy, sampler.closed_busy_bytes_in, sampler.closes_counted) == (2, 400, 0)
    assert sampler.carried[100].bytes_in == sampler.carried[200].bytes_in == 200  # up to their last look


def test_without_the_announcements_the_tails_are_missing_and_said(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel refuses to let us join (as one would without NL_CFG_F_NONROOT_RECV, or setns refused): the
    load is read as before, the closed busy counted, and one note says what is missing and why."""

    def refused(ports: object, netns_pid: object = None) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted")

    looks: list[Look] = [
        ([sock(1, 11, 100)], {100: {11}, 200: set()}),
        ([sock(1, 11, 300)], {100: {11}, 200: set()}),
        ([], {100: set(), 200: set()}),
    ]
    sampler = sampler_over(monkeypatch, looks, [], watch=refused)
    assert (sampler.closed_busy, sampler.closed_busy_bytes_in) == (1, 200)
    summary = sampler.summary()
    assert "closes_counted" not in summary and "closed_unlooked" not in summary  # not read: None in the result
    notes = sampler.notes(threaded=False, program="x")
    assert notes == [
        "what a connection carried after its last look before it closed is not counted: the kernel's announcements "
        "of closed sockets (sock_diag's TCP destroy groups) could not be joined (Operation not permitted)"
    ]


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
