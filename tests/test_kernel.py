"""Tests for accept_order.probes.netstat (counters), probes.listeners (listening sockets), cpus (CPU lists).

The live tests open real sockets on 127.0.0.1 (and ::1 when available) and wait for kernel
state with a bounded poll, never with a fixed sleep.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import TypeVar

import pytest

try:
    from accept_order.core import cpus as cpu_lists
except ImportError:  # running from a source checkout without an install
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from accept_order.core import cpus as cpu_lists
from accept_order.probes import listeners, netstat

DATA = Path(__file__).parent / "data"
NETSTAT_SAMPLE = DATA / "netstat_sample.txt"
LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux procfs/netlink")

T = TypeVar("T")


def wait_for(probe: Callable[[], T], done: Callable[[T], bool], timeout: float = 2.0) -> T:
    """Call probe() until done(result) or the deadline passes; return the last result."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if done(value) or time.monotonic() >= deadline:
            return value
        time.sleep(0.005)


# --------------------------------------------------------------------------------------------
# /proc/net/netstat
# --------------------------------------------------------------------------------------------


def _edit_counter(text: str, prefix: str, name: str, value: int) -> str:
    """Return netstat text with one counter set to value."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        fields = line.split()
        if fields[0] == f"{prefix}:" and name in fields:
            col = fields.index(name)
            values = lines[i + 1].split()
            assert values[0] == f"{prefix}:"
            values[col] = str(value)
            lines[i + 1] = " ".join(values)
            return "\n".join(lines) + "\n"
    raise AssertionError(f"{prefix}{name} not in sample")


def test_parse_real_sample() -> None:
    text = NETSTAT_SAMPLE.read_text()
    counters = netstat.parse_netstat(text)
    for name in netstat.WATCHED_COUNTERS:  # the sample's 6.18 kernel has all of them
        assert name in counters
    assert counters["TcpExtListenOverflows"] == 0
    assert counters["IpExtInOctets"] == 72451902
    assert counters["TcpExtTW"] == 10
    assert "MPTcpExtMPCapableSYNRX" in counters
    header_names = sum(len(line.split()) - 1 for line in text.splitlines()[0::2])
    assert len(counters) == header_names


def test_deltas_from_edited_copy() -> None:
    before_text = NETSTAT_SAMPLE.read_text()
    after_text = _edit_counter(before_text, "TcpExt", "ListenOverflows", 7)
    after_text = _edit_counter(after_text, "TcpExt", "ListenDrops", 9)
    after_text = _edit_counter(after_text, "TcpExt", "TCPMigrateReqSuccess", 3)
    before = netstat.parse_netstat(before_text)
    after = netstat.parse_netstat(after_text)
    deltas = netstat.counter_deltas(before, after)
    assert list(deltas) == list(netstat.WATCHED_COUNTERS)
    assert deltas["TcpExtListenOverflows"] == 7
    assert deltas["TcpExtListenDrops"] == 9
    assert deltas["TcpExtTCPMigrateReqSuccess"] == 3
    assert sum(deltas.values()) == 19
    # Everything else is unchanged.
    assert netstat.counter_deltas(before, after, names=before) == {name: after[name] - before[name] for name in before}


def test_deltas_leave_out_missing_names() -> None:
    before = {"TcpExtListenOverflows": 1, "TcpExtListenDrops": 2}
    after = {"TcpExtListenOverflows": 4, "TcpExtSyncookiesSent": 5}
    assert netstat.counter_deltas(before, after) == {"TcpExtListenOverflows": 3}
    assert netstat.counter_deltas(before, after, names=("Nope",)) == {}


def test_parse_snmp_style_with_negative_value() -> None:
    text = (
        "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens\n"
        "Tcp: 1 200 120000 -1 42\n"
        "Udp: InDatagrams NoPorts\n"
        "Udp: 5 6\n"
    )
    assert netstat.parse_netstat(text) == {
        "TcpRtoAlgorithm": 1,
        "TcpRtoMin": 200,
        "TcpRtoMax": 120000,
        "TcpMaxConn": -1,
        "TcpActiveOpens": 42,
        "UdpInDatagrams": 5,
        "UdpNoPorts": 6,
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("TcpExt: A B\n", "no value line"),
        ("TcpExt: A B\nIpExt: C\nIpExt: 1\n", "no value line"),
        ("TcpExt: A B\nTcpExt: 1\n", "2 names but 1 values"),
        ("TcpExt: A B\nTcpExt: 1 x\n", "TcpExtB value 'x'"),
        ("garbage\n", "expected 'Prefix: ...'"),
    ],
)
def test_parse_netstat_rejects_malformed(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        netstat.parse_netstat(text)


def test_parse_netstat_empty() -> None:
    assert netstat.parse_netstat("") == {}


def test_read_netstat_missing_file(tmp_path: Path) -> None:
    assert netstat.read_netstat(str(tmp_path / "nope")) == {}
    assert netstat.read_counters([str(tmp_path / "nope"), str(NETSTAT_SAMPLE)])["IpExtInOctets"] == 72451902


@LINUX_ONLY
def test_read_live_counters() -> None:
    if not os.path.exists(netstat.NETSTAT_PATH):
        pytest.skip("no /proc/net/netstat")
    counters = netstat.read_counters()
    assert "TcpExtListenOverflows" in counters
    if os.path.exists(netstat.SNMP_PATH):
        assert "TcpActiveOpens" in counters


def test_namespace_note() -> None:
    assert "namespace" in netstat.SHARED_NAMESPACE_NOTE
    assert isinstance(netstat.in_private_netns(), bool)


# --------------------------------------------------------------------------------------------
# Listening sockets: live
# --------------------------------------------------------------------------------------------


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    """Closes every socket a test registers, even when the test fails."""
    with ExitStack() as es:
        yield es


def _listener(
    stack: ExitStack,
    backlog: int,
    port: int = 0,
    reuseport: bool = False,
    family: socket.AddressFamily = socket.AF_INET,
    host: str = "127.0.0.1",
) -> socket.socket:
    sock = stack.enter_context(socket.socket(family, socket.SOCK_STREAM))
    if reuseport:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(backlog)
    return sock


def _connect(stack: ExitStack, port: int, host: str = "127.0.0.1") -> socket.socket:
    return stack.enter_context(socket.create_connection((host, port), timeout=2.0))


def _port(sock: socket.socket) -> int:
    return int(sock.getsockname()[1])


def _ino(sock: socket.socket) -> int:
    return os.fstat(sock.fileno()).st_ino


def _queue_total(port: int) -> int:
    return sum(row.queue for row in listeners.listening_sockets(port))


@LINUX_ONLY
def test_single_listener(stack: ExitStack) -> None:
    srv = _listener(stack, backlog=7)
    rows = listeners.listening_sockets(_port(srv))
    assert rows == [
        listeners.ListenerRow(family="ipv4", address="127.0.0.1", port=_port(srv), queue=0, backlog=7, inode=_ino(srv))
    ]
    assert rows[0].source == "netlink"


@LINUX_ONLY
def test_three_reuseport_listeners(stack: ExitStack) -> None:
    first = _listener(stack, backlog=3, reuseport=True)
    port = _port(first)
    others = [_listener(stack, backlog=b, port=port, reuseport=True) for b in (4, 5)]
    rows = listeners.listening_sockets(port)
    assert len(rows) == 3
    expected = {_ino(s): b for s, b in zip([first, *others], (3, 4, 5), strict=True)}
    assert {row.inode: row.backlog for row in rows} == expected
    assert all(row.queue == 0 and row.port == port and row.source == "netlink" for row in rows)
    # A listener on another port does not show up.
    _listener(stack, backlog=1)
    assert len(listeners.listening_sockets(port)) == 3


@LINUX_ONLY
def test_unaccepted_clients_fill_the_queue(stack: ExitStack) -> None:
    srv = _listener(stack, backlog=7)
    port = _port(srv)
    for _ in range(2):
        _connect(stack, port)
    assert wait_for(lambda: _queue_total(port), lambda q: q == 2) == 2
    (row,) = listeners.listening_sockets(port)
    assert (row.queue, row.backlog) == (2, 7)
    # The /proc view agrees on the queue and the inode, but cannot see the backlog.
    (proc_row,) = listeners.proc_listeners(port)
    assert (proc_row.queue, proc_row.backlog, proc_row.inode, proc_row.source) == (2, None, row.inode, "proc")
    # Accepting one drains the queue by one.
    conn, _ = srv.accept()
    stack.enter_context(conn)
    assert wait_for(lambda: _queue_total(port), lambda q: q == 1) == 1


@LINUX_ONLY
def test_backlog_is_capped_at_somaxconn(stack: ExitStack) -> None:
    try:
        somaxconn = int(Path("/proc/sys/net/core/somaxconn").read_text())
    except (OSError, ValueError):
        pytest.skip("cannot read net.core.somaxconn")
    if somaxconn >= 2**31 - 1001:
        pytest.skip("somaxconn too large to exceed")
    srv = _listener(stack, backlog=somaxconn + 1000)
    (row,) = listeners.listening_sockets(_port(srv))
    assert row.backlog == somaxconn


@LINUX_ONLY
def test_full_queue_holds_backlog_plus_one_and_counts_overflow(stack: ExitStack) -> None:
    if not os.path.exists(netstat.NETSTAT_PATH):
        pytest.skip("no /proc/net/netstat")
    srv = _listener(stack, backlog=1)
    port = _port(srv)
    for _ in range(2):  # the kernel only calls the queue full when it holds MORE than backlog
        _connect(stack, port)
    assert wait_for(lambda: _queue_total(port), lambda q: q == 2) == 2
    before = netstat.read_netstat()
    extra = stack.enter_context(socket.socket())
    extra.setblocking(False)
    extra.connect_ex(("127.0.0.1", port))  # its SYN is dropped: accept queue full
    deltas = wait_for(
        lambda: netstat.counter_deltas(before, netstat.read_netstat()),
        lambda d: d.get("TcpExtListenOverflows", 0) >= 1 and d.get("TcpExtListenDrops", 0) >= 1,
    )
    # Counters are namespace-wide: other traffic can only add to them, hence >=.
    assert deltas["TcpExtListenOverflows"] >= 1
    assert deltas["TcpExtListenDrops"] >= 1
    assert _queue_total(port) == 2


def _ipv6_loopback_ok() -> bool:
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
    except OSError:
        return False
    return True


@LINUX_ONLY
@pytest.mark.skipif(not _ipv6_loopback_ok(), reason="no IPv6 loopback")
def test_ipv6_listener(stack: ExitStack) -> None:
    srv = _listener(stack, backlog=5, family=socket.AF_INET6, host="::1")
    port = _port(srv)
    _connect(stack, port, host="::1")
    assert wait_for(lambda: _queue_total(port), lambda q: q == 1) == 1
    v6only = bool(srv.getsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY))  # inet_diag says the socket's own
    assert listeners.listening_sockets(port) == [
        listeners.ListenerRow(
            family="ipv6", address="::1", port=port, queue=1, backlog=5, inode=_ino(srv), v6only=v6only
        )
    ]
    (proc_row,) = listeners.proc_listeners(port)
    assert (proc_row.family, proc_row.address, proc_row.queue) == ("ipv6", "::1", 1)


@LINUX_ONLY
def test_falls_back_to_proc_when_netlink_fails(stack: ExitStack, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(port: int) -> list[listeners.ListenerRow]:
        raise PermissionError(13, "netlink blocked")

    monkeypatch.setattr(listeners, "netlink_listeners", broken)
    srv = _listener(stack, backlog=7)
    port = _port(srv)
    _connect(stack, port)
    rows = wait_for(lambda: listeners.listening_sockets(port), lambda r: sum(x.queue for x in r) == 1)
    assert rows == [
        listeners.ListenerRow("ipv4", "127.0.0.1", port, queue=1, backlog=None, inode=_ino(srv), source="proc")
    ]


def test_port_is_validated() -> None:
    for bad in (0, -1, 65536):
        with pytest.raises(ValueError, match="port must be in 1..65535"):
            listeners.listening_sockets(bad)


def _ss_rows(port: int) -> list[tuple[int, int, int]]:
    """(Recv-Q, Send-Q, inode) of `ss -ltnHe sport = :PORT`."""
    out = subprocess.run(
        ["ss", "-ltnHe", "sport", "=", f":{port}"], capture_output=True, text=True, check=True, timeout=10
    ).stdout
    rows = []
    for line in out.splitlines():
        fields = line.split()
        ino = next(int(f[4:]) for f in fields if f.startswith("ino:"))
        rows.append((int(fields[1]), int(fields[2]), ino))
    return sorted(rows)


@LINUX_ONLY
@pytest.mark.skipif(shutil.which("ss") is None, reason="ss (iproute2) not installed")
def test_matches_ss(stack: ExitStack) -> None:
    first = _listener(stack, backlog=3, reuseport=True)
    port = _port(first)
    for backlog in (4, 6):
        _listener(stack, backlog=backlog, port=port, reuseport=True)
    for _ in range(3):
        _connect(stack, port)
    assert wait_for(lambda: _queue_total(port), lambda q: q == 3) == 3
    ours = sorted((row.queue, row.backlog or -1, row.inode) for row in listeners.listening_sockets(port))
    assert ours == _ss_rows(port)


# --------------------------------------------------------------------------------------------
# Netlink reply parsing (fake socket: multipart, errors, other ports)
# --------------------------------------------------------------------------------------------


def _nlmsg(mtype: int, seq: int, payload: bytes) -> bytes:
    length = 16 + len(payload)
    pad = b"\0" * (-length % 4)
    return struct.pack("=IHHII", length, mtype, 2, seq, 0) + payload + pad


def _diag_msg(family: int, addr: str, port: int, rq: int, wq: int, inode: int) -> bytes:
    raw = socket.inet_pton(family, addr).ljust(16, b"\0")
    sockid = struct.pack("!HH16s16s", port, 0, raw, b"") + struct.pack("=III", 0, 0, 0)
    return struct.pack("=BBBB", family, 10, 0, 0) + sockid + struct.pack("=IIIII", 0, rq, wq, 0, inode)


class FakeNetlink:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.sent: list[bytes] = []

    def send(self, data: bytes) -> int:
        self.sent.append(data)
        return len(data)

    def recv(self, bufsize: int) -> bytes:
        return self.chunks.pop(0)


def test_dump_parses_multipart_and_filters_port() -> None:
    seq = 5
    fake = FakeNetlink(
        [
            _nlmsg(3, seq - 1, struct.pack("=i", 0))  # stale DONE from an older request: ignored
            + _nlmsg(20, seq, _diag_msg(socket.AF_INET, "10.0.0.1", 8080, 2, 511, 111))
            + _nlmsg(20, seq, _diag_msg(socket.AF_INET, "0.0.0.0", 9090, 0, 5, 222)),
            _nlmsg(20, seq, _diag_msg(socket.AF_INET6, "fe80::1", 8080, 0, 4096, 333)),
            _nlmsg(3, seq, struct.pack("=i", 0)),
        ]
    )
    rows = listeners._dump_listeners(fake, socket.AF_INET, 8080, seq)  # type: ignore[arg-type]
    assert rows == [
        listeners.ListenerRow("ipv4", "10.0.0.1", 8080, 2, 511, 111),
        listeners.ListenerRow("ipv6", "fe80::1", 8080, 0, 4096, 333),
    ]
    (request,) = fake.sent
    length, mtype, flags, req_seq, _ = struct.unpack_from("=IHHII", request)
    assert (length, mtype, flags, req_seq) == (len(request), 20, 0x301, seq)
    family, proto, _ext, _pad, states = struct.unpack_from("=BBBBI", request, 16)
    assert (family, proto, states) == (socket.AF_INET, socket.IPPROTO_TCP, 1 << 10)
    assert struct.unpack_from("!H", request, 24) == (8080,)


def test_dump_raises_on_netlink_error() -> None:
    fake = FakeNetlink([_nlmsg(2, 1, struct.pack("=i", -13) + b"\0" * 16)])
    with pytest.raises(OSError) as info:
        listeners._dump_listeners(fake, socket.AF_INET, 80, 1)  # type: ignore[arg-type]
    assert info.value.errno == 13


def test_dump_rejects_truncated_message() -> None:
    fake = FakeNetlink([struct.pack("=IHHII", 200, 20, 2, 1, 0) + b"\0" * 8])
    with pytest.raises(OSError, match="bad netlink message length"):
        listeners._dump_listeners(fake, socket.AF_INET, 80, 1)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# /proc/net/tcp parsing (captured on this x86-64 machine while 2 clients waited on :46919 and
# 1 on [::1]:44521; trimmed to a few lines of each state)
# --------------------------------------------------------------------------------------------

PROC_NET_TCP = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:B747 00000000:0000 0A 00000000:00000002 00:00000000 00000000     0        0 9466 3 000000009d5cf157 100 0 0 10 0
   1: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1065 1 00000000ef1fff2b 100 0 0 10 0
   2: 0100007F:AA9D 0100007F:D854 06 00000000:00000000 03:000004EE 00000000     0        0 0 3 000000002efc30e9
   9: 0100007F:9ED0 0100007F:B747 01 00000000:00000000 00:00000000 00000000     0        0 9468 2 0000000086e230ca 20 0 0 10 -1
  35: 0100007F:B747 0100007F:9EDE 01 00000000:00000000 00:00000000 00000000     0        0 0 1 000000003b6ef35b 20 0 0 10 -1
"""  # noqa: E501

PROC_NET_TCP6 = """\
  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:ADE9 00000000000000000000000000000000:0000 0A 00000000:00000001 00:00000000 00000000     0        0 9467 2 000000000be48901 100 0 0 10 0
   1: 00000000000000000000000001000000:B118 00000000000000000000000001000000:ADE9 01 00000000:00000000 00:00000000 00000000     0        0 9470 2 00000000abe7d284 20 0 0 10 -1
"""  # noqa: E501


def test_parse_proc_net_tcp_captured() -> None:
    rows = listeners.parse_proc_net_tcp(PROC_NET_TCP, "ipv4", byteorder="little")
    assert rows == [
        listeners.ListenerRow("ipv4", "127.0.0.1", 46919, 2, None, 9466, source="proc"),
        listeners.ListenerRow("ipv4", "0.0.0.0", 2024, 0, None, 1065, source="proc"),
    ]


def test_parse_proc_net_tcp6_captured() -> None:
    rows = listeners.parse_proc_net_tcp(PROC_NET_TCP6, "ipv6", byteorder="little")
    assert rows == [listeners.ListenerRow("ipv6", "::1", 44521, 1, None, 9467, source="proc")]


def test_parse_proc_net_tcp_big_endian_and_errors() -> None:
    line = "   0: 7F000001:0050 00000000:0000 0A 00000000:00000003 00:00000000 00000000 0 0 42 1 0 100 0\n"
    (row,) = listeners.parse_proc_net_tcp(line, "ipv4", byteorder="big")
    assert (row.address, row.port, row.queue, row.inode) == ("127.0.0.1", 80, 3, 42)
    with pytest.raises(ValueError, match="line 1"):
        listeners.parse_proc_net_tcp("   0: 7F000001 00000000:0000 0A\n", "ipv4")
    with pytest.raises(ValueError, match="family"):
        listeners.parse_proc_net_tcp("", "ipx")  # type: ignore[arg-type]
    assert listeners.parse_proc_net_tcp("", "ipv6") == []


def test_proc_listeners_missing_dir(tmp_path: Path) -> None:
    assert listeners.proc_listeners(80, proc_net=str(tmp_path)) == []


# --------------------------------------------------------------------------------------------
# CPU lists and affinity
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "cpus"),
    [
        ("0-1,3", [0, 1, 3]),
        ("0", [0]),
        ("0-3\n", [0, 1, 2, 3]),
        (" 2 , 0-1 ", [0, 1, 2]),
        ("5,1-2,2", [1, 2, 5]),
        ("7-7", [7]),
    ],
)
def test_parse_cpu_list(text: str, cpus: list[int]) -> None:
    assert cpu_lists.parse_cpu_list(text) == cpus


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty CPU list"),
        ("  ", "empty CPU list"),
        ("a", "bad CPU list item 'a'"),
        ("3-1", "start is after end"),
        ("0,,1", "bad CPU list item ''"),
        ("1-", "bad CPU list item '1-'"),
        ("-1", "bad CPU list item '-1'"),
        ("0-2-4", "bad CPU list item '0-2-4'"),
        ("1.5", "bad CPU list item '1.5'"),
    ],
)
def test_parse_cpu_list_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        cpu_lists.parse_cpu_list(text)


@pytest.mark.parametrize(
    ("cpus", "text"),
    [([0, 1, 3], "0-1,3"), ([], ""), ([4], "4"), ([3, 2, 1, 1, 0, 8, 9, 11], "0-3,8-9,11")],
)
def test_format_cpu_list(cpus: list[int], text: str) -> None:
    assert cpu_lists.format_cpu_list(cpus) == text
    if cpus:
        assert cpu_lists.parse_cpu_list(text) == sorted(set(cpus))


def test_format_cpu_list_rejects_negative() -> None:
    with pytest.raises(ValueError, match=">= 0"):
        cpu_lists.format_cpu_list([-1, 0])


def test_affinity_of_self() -> None:
    cpus = cpu_lists.affinity(os.getpid())
    if hasattr(os, "sched_getaffinity"):
        assert cpus == sorted(os.sched_getaffinity(0))
    assert cpus == sorted(cpus)
