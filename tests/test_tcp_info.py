"""probes/tcp_info.py: each server-side socket's counters from one inet_diag dump, decoded by hand, are the
bytes the test moved over it and what pyroute2 (an independent decoder of the same replies) names them;
the port filter keeps the server's sockets and no other; a tcp_info too short for a field gives None; a
server in another network namespace is read from inside it."""

from __future__ import annotations

import os
import shutil
import socket
import struct
import subprocess
import sys
from collections.abc import Iterator

import pytest
from conftest import OutputReader, ipv6_loopback_works, wait_for

from accept_order.probes import tcp_info
from accept_order.probes.tcp_info import ESTABLISHED, TcpSocket, server_sockets

pyroute2 = pytest.importorskip("pyroute2")
TIMEOUT_S = 10.0


class Pair:
    """A connection over loopback: the client's end and the server's (accepted) end."""

    def __init__(self, listener: socket.socket) -> None:
        family = listener.family
        self.client = socket.create_connection(listener.getsockname()[:2], timeout=TIMEOUT_S)
        assert self.client.family == family
        self.server, _ = listener.accept()
        self.inode = os.fstat(self.server.fileno()).st_ino

    def move(self, up: int, down: int) -> None:
        """`up` bytes client -> server and `down` bytes back, each read whole at the other end."""
        for sender, receiver, size in ((self.client, self.server, up), (self.server, self.client, down)):
            if not size:
                continue
            sender.sendall(b"x" * size)
            got = 0
            while got < size:
                chunk = receiver.recv(size - got)
                assert chunk
                got += len(chunk)

    def close(self) -> None:
        self.client.close()
        self.server.close()


def listen(family: int = socket.AF_INET, port: int = 0) -> socket.socket:
    sock = socket.socket(family)
    sock.bind(("::1" if family == socket.AF_INET6 else "127.0.0.1", port))
    sock.listen(64)
    return sock


@pytest.fixture
def pairs() -> Iterator[tuple[list[socket.socket], list[Pair]]]:
    """Two listeners (IPv4 on two ports, IPv6 on the first where it works) and connections with known
    traffic on each: the bytes differ per connection, one is idle, one is half-closed by its client."""
    first = listen()
    port = first.getsockname()[1]
    listeners = [first, listen()]
    if ipv6_loopback_works():
        listeners.append(listen(socket.AF_INET6, port))
    made: list[Pair] = []
    try:
        for index, listener in enumerate(listeners):
            for size in (0, 1000 + index, 70_000 + index):
                pair = Pair(listener)
                made.append(pair)
                pair.move(size, size // 7)
        made[-1].client.shutdown(socket.SHUT_WR)  # the server end goes to CLOSE_WAIT: still open, still counted
        yield listeners, made
    finally:
        for pair in made:
            pair.close()
        for listener in listeners:
            listener.close()


def _ports(listeners: list[socket.socket]) -> list[int]:
    return sorted({s.getsockname()[1] for s in listeners})


def witness(ports: list[int]) -> dict[int, dict[str, int]]:
    """pyroute2's reading of the same sockets: inode -> its named fields."""
    found: dict[int, dict[str, int]] = {}
    with pyroute2.DiagSocket() as diag:
        diag.bind()
        for family in (socket.AF_INET, socket.AF_INET6):
            for msg in diag.get_sock_stats(family=family, states=tcp_info.STATES, extensions=1 << 1):
                if msg["idiag_sport"] not in ports or not msg["idiag_inode"]:
                    continue
                info = msg.get_attr("INET_DIAG_INFO")
                found[msg["idiag_inode"]] = {
                    "cookie": msg["idiag_cookie"],
                    "state": msg["idiag_state"],
                    "port": msg["idiag_sport"],
                    **{name: info[f"tcpi_{name}"] for name in ("bytes_received", "bytes_acked")},
                    **{name: info[f"tcpi_{name}"] for name in ("data_segs_in", "data_segs_out")},
                }
    return found


def moved(listeners: list[socket.socket]) -> list[tuple[int, int]]:
    """What the fixture moved per connection, (in, out), sorted; the half-closed one's FIN takes a sequence
    number, which tcpi_bytes_received counts as one byte."""
    sizes = [(size, size // 7) for index in range(len(listeners)) for size in (0, 1000 + index, 70_000 + index)]
    sizes[-1] = (sizes[-1][0] + 1, sizes[-1][1])
    return sorted(sizes)


def counted(ports: list[int]) -> list[tuple[int | None, int | None]]:
    return sorted((s.bytes_received, s.bytes_acked) for s in server_sockets(ports))


def test_the_decoder_reads_what_pyroute2_reads_and_what_was_moved(
    pairs: tuple[list[socket.socket], list[Pair]],
) -> None:
    listeners, made = pairs
    ports = _ports(listeners)
    # bytes_acked: what the peer acknowledged, so after its (delayed) ACKs: waited for, not slept for
    wait_for(lambda: counted(ports), lambda got: got == moved(listeners), TIMEOUT_S, "the bytes moved, acked")
    ours = {s.inode: s for s in server_sockets(ports)}
    theirs = witness(ports)
    assert set(ours) == set(theirs) == {p.inode for p in made}  # server ends only: no listener, no client end
    for inode, named in theirs.items():
        mine = ours[inode]
        assert {k: getattr(mine, k) for k in named} == named, inode
        assert mine.last_data_recv_ms is not None
    assert all(s.data_segs_in == 0 for s in ours.values() if s.bytes_received == 0)
    assert [s.state for s in ours.values()].count(ESTABLISHED) == len(made) - 1  # one is CLOSE_WAIT


def test_counters_move_with_the_traffic(pairs: tuple[list[socket.socket], list[Pair]]) -> None:
    listeners, made = pairs
    ports = _ports(listeners)
    wait_for(lambda: counted(ports), lambda got: got == moved(listeners), TIMEOUT_S, "the bytes moved, acked")
    before = {s.inode: s for s in server_sockets(ports)}
    made[1].move(12_345, 678)
    inode = made[1].inode
    after = wait_for(
        lambda: {s.inode: s for s in server_sockets(ports)},
        lambda now: now[inode].bytes_acked == (before[inode].bytes_acked or 0) + 678,
        TIMEOUT_S,
        "678 more bytes acked",
    )
    assert after[inode].bytes_received - before[inode].bytes_received == 12_345
    assert after[inode].data_segs_in > before[inode].data_segs_in
    assert after[inode].data_segs_out > before[inode].data_segs_out
    assert after[inode].cookie == before[inode].cookie
    others = [i for i in before if i != inode]
    assert [after[i].bytes_received for i in others] == [before[i].bytes_received for i in others]


def _message(info_size: int, seq: int = 7) -> bytes:
    """One SOCK_DIAG_BY_FAMILY reply as the kernel lays it out, with a tcp_info of `info_size` bytes whose
    fields hold their own offsets, then NLMSG_DONE."""
    info = bytearray(max(info_size, 0))
    for _name, offset, fmt in tcp_info._FIELDS:
        if offset + struct.calcsize(fmt) <= info_size:
            struct.pack_into(fmt, info, offset, offset)
    msg = struct.pack("=BB2xH38xII16xI", socket.AF_INET, ESTABLISHED, socket.htons(8080), 5, 1, 4242)
    attr = struct.pack("=HH", 4 + len(info), tcp_info.INET_DIAG_INFO) + bytes(info)
    attr += b"\0" * (-len(attr) % 4)
    shutdown = struct.pack("=HHB3x", 5, 8, 0)  # INET_DIAG_SHUTDOWN, before it as the kernel puts it
    body = msg + shutdown + attr
    one = struct.pack("=IHHII", 16 + len(body), tcp_info.SOCK_DIAG_BY_FAMILY, 2, seq, 0) + body
    return one + struct.pack("=IHHIIi", 20, tcp_info.NLMSG_DONE, 2, seq, 0, 0)


@pytest.mark.parametrize(
    ("size", "present"),
    [(232, 5), (160, 5), (156, 4), (136, 3), (128, 2), (100, 1), (56, 1), (40, 0)],
)
def test_a_short_tcp_info_leaves_the_fields_it_lacks_none(size: int, present: int) -> None:
    data = _message(size)
    out: list[TcpSocket] = []
    assert tcp_info.decode(data, len(data), 7, frozenset({8080}), out)
    (sock,) = out
    assert (sock.cookie, sock.inode, sock.state, sock.port) == (5 | 1 << 32, 4242, ESTABLISHED, 8080)
    values = {name: getattr(sock, name) for name, _, _ in tcp_info._FIELDS}
    assert values == {name: (offset if i < present else None) for i, (name, offset, _) in enumerate(tcp_info._FIELDS)}


def test_other_ports_and_other_requests_replies_are_left_out() -> None:
    data = _message(232, seq=3) + _message(232, seq=7)
    out: list[TcpSocket] = []
    assert not tcp_info.decode(data[: len(_message(232))], len(_message(232)), 7, frozenset({8080}), out)
    assert tcp_info.decode(data, len(data), 7, frozenset({8081}), out) and out == []


def test_the_port_filter_is_the_kernels(pairs: tuple[list[socket.socket], list[Pair]]) -> None:
    """The bytecode keeps exactly the asked ports: asked one port at a time, each gets its own sockets."""
    listeners, made = pairs
    ports = _ports(listeners)
    by_port = {port: {s.inode for s in server_sockets([port])} for port in ports}
    assert set().union(*by_port.values()) == {p.inode for p in made}
    assert not set.intersection(*by_port.values())
    decoded: list[TcpSocket] = []

    class Unfiltered(tcp_info.Decoder):
        def __init__(self, seq: int, wanted: frozenset[int], out: list[TcpSocket]) -> None:
            super().__init__(seq, frozenset(range(1, 65536)), decoded)  # no filter on our side

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tcp_info, "Decoder", Unfiltered)
        server_sockets([ports[0]])
    decoded_ports = {s.port for s in decoded}
    assert decoded_ports == {ports[0]}  # the kernel sent no other port's socket (the clients' ends included)


def test_a_kernel_that_refuses_the_request_for_both_families_is_asked_for_each(
    pairs: tuple[list[socket.socket], list[Pair]], monkeypatch: pytest.MonkeyPatch
) -> None:
    listeners, made = pairs
    ports = _ports(listeners)
    both = sorted(s._replace(last_data_recv_ms=None) for s in server_sockets(ports))  # (the clock moves)
    real = tcp_info._request_both

    def refused(filter_code: bytes, seq: int) -> bytes:
        request = bytearray(real(filter_code, seq))
        request[4:6] = (99).to_bytes(2, sys.byteorder)  # no such request type: the kernel answers EINVAL
        return bytes(request)

    monkeypatch.setattr(tcp_info, "_request_both", refused)
    each = sorted(s._replace(last_data_recv_ms=None) for s in server_sockets(ports))
    assert each == both and len(both) == len(made)


def test_bad_ports_are_refused() -> None:
    assert server_sockets([]) == []
    with pytest.raises(ValueError):
        server_sockets([0])


SERVER_IN_NETNS = """
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(4)
c = socket.create_connection(s.getsockname()); a, _ = s.accept()
c.sendall(b"z" * 4321); got = 0
while got < 4321: got += len(a.recv(8192))
print(s.getsockname()[1], flush=True)
sys.stdin.read()
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="a network namespace needs root")
def test_a_server_in_another_namespace_is_read_from_inside_it() -> None:
    proc = subprocess.Popen(
        ["unshare", "--net", sys.executable, "-c", f"import os; os.system('ip link set lo up')\n{SERVER_IN_NETNS}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        port = int(OutputReader(proc.stdout).wait_for(r"(\d+)\n", TIMEOUT_S)[1])
        theirs = server_sockets([port], netns_pid=proc.pid)
        assert [(s.bytes_received, s.state) for s in theirs] == [(4321, ESTABLISHED)]
        assert all(s.inode != 0 for s in theirs)
        assert all(s.bytes_received != 4321 for s in server_sockets([port]))  # not in ours
    finally:
        proc.kill()
        proc.wait(TIMEOUT_S)
