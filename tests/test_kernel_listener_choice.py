"""Review RQ of 952fb06: `takes` answers for one listener alone, but where several listen on one port the kernel
hands a connection to the most specific only (Linux 6.18 __inet_lookup_listener): the socket bound to the address
before a wildcard, and for an IPv4 connection an IPv4 socket before a dual-stack `::`. serving_on (evidence, ramp)
and --attach's check asked `takes` of each row and counted a 0.0.0.0 queue beside 127.0.0.1's (or a `::` beside
0.0.0.0, nginx's `listen 80; listen [::]:80` read from /proc, IPV6_V6ONLY not known) that got none of the
connections, and refused an attach for a catch-all listener of another process that got none. A connection to
0.0.0.0 (`::`) reaches 127.0.0.1 (`::1`). Each answer is checked against real connects."""

from __future__ import annotations

import contextlib
import errno
import os
import select
import socket
from collections.abc import Iterator

import pytest
from conftest import needs_ipv6

from accept_order.core.errors import NotServing
from accept_order.core.measures import ListenerRow
from accept_order.probes.listeners import listening_sockets, serving_on, takes
from accept_order.servers.attached_listening import check_listening

CONNECTS = 12  # connections per host: enough for any listener the kernel would choose to get some
TIMEOUT_S = 5.0
PORT_TRIES = 20


def _socket(address: str, v6only: bool | None, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)  # several on one port, as a reuseport server
        if v6only is not None:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, int(v6only))
        sock.bind((address, port))
        sock.listen(CONNECTS * 2)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


@contextlib.contextmanager
def listeners(*wanted: tuple[str, bool | None]) -> Iterator[list[socket.socket]]:
    """Listeners on one port, in the order given. The first picks a port free for its own address; another
    address may be in use there (a connection's local port, on a busy machine): then another port is tried."""
    for _ in range(PORT_TRIES):
        made: list[socket.socket] = []
        try:
            for address, v6only in wanted:
                made.append(_socket(address, v6only, made[0].getsockname()[1] if made else 0))
        except OSError as exc:
            for sock in made:
                sock.close()
            if exc.errno != errno.EADDRINUSE:
                raise
            continue
        try:
            yield made
        finally:
            for sock in made:
                sock.close()
        return
    pytest.fail(f"no port free for every one of {wanted} in {PORT_TRIES} tries")


def landed(socks: list[socket.socket], host: str) -> set[int]:
    """The inodes of the listeners whose accept queues connections to host:port reached."""
    port, got = socks[0].getsockname()[1], set()
    for _ in range(CONNECTS):
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as client:
            client.settimeout(TIMEOUT_S)
            if client.connect_ex((host, port)) == errno.ECONNREFUSED:
                return got
            ready, _, _ = select.select(socks, [], [], TIMEOUT_S)
            assert ready, f"connected to {host} but no listener's queue has it"
            for sock in ready:
                with contextlib.suppress(BlockingIOError):
                    sock.accept()[0].close()
                    got.add(os.fstat(sock.fileno()).st_ino)
    return got


def chosen(socks: list[socket.socket], host: str) -> set[int]:
    return {row.inode for row in serving_on(listening_sockets(socks[0].getsockname()[1]), host)}


V4_HOSTS = ("127.0.0.1", "127.0.0.2", "::ffff:127.0.0.1", "0.0.0.0")


@pytest.mark.parametrize("host", V4_HOSTS)
@pytest.mark.parametrize("order", [("127.0.0.1", "0.0.0.0"), ("0.0.0.0", "127.0.0.1")])
def test_the_address_bound_before_the_wildcard(order: tuple[str, str], host: str) -> None:
    with listeners(*((address, None) for address in order)) as socks:
        assert chosen(socks, host) == landed(socks, host)


@needs_ipv6
@pytest.mark.parametrize("host", [*V4_HOSTS, "::1", "::"])
@pytest.mark.parametrize(
    "wanted",
    [
        (("0.0.0.0", None), ("::", False)),  # a dual-stack :: beside 0.0.0.0 gets the IPv6 connections alone
        (("::", False), ("0.0.0.0", None)),
        (("::1", None), ("::", True)),
        (("::ffff:127.0.0.1", False), ("0.0.0.0", None)),
        (("::1", None), ("0.0.0.0", None), ("::", False)),
    ],
)
def test_the_kernels_choice_among_families(wanted: tuple[tuple[str, bool | None], ...], host: str) -> None:
    with listeners(*wanted) as socks:
        assert chosen(socks, host) == landed(socks, host)


def test_a_connection_to_the_unspecified_address_reaches_the_loopback() -> None:
    row = ListenerRow("ipv4", "127.0.0.1", 80, 0, 1, 1)
    assert takes(row, "0.0.0.0") and takes(row, "::ffff:0.0.0.0") and not takes(row, "::")


def test_a_link_local_hosts_zone_is_no_part_of_the_bound_address() -> None:
    """--host fe80::1%eth0 is kept with its zone; the listener's row (inet_diag, /proc) has none."""
    row = ListenerRow("ipv6", "fe80::1", 80, 0, 1, 1, v6only=True)
    assert takes(row, "fe80::1%eth0") and serving_on([row], "fe80::1%eth0") == [row]
    assert not takes(row, "fe80::2%eth0")


def test_proc_rows_of_nginxs_two_listens_give_the_ipv4_socket_for_an_ipv4_host() -> None:
    """/proc has no IPV6_V6ONLY: `::` might take IPv4 connections, but not beside a 0.0.0.0 (whatever its flag)."""
    v4 = ListenerRow("ipv4", "0.0.0.0", 80, 3, None, 1, "proc")
    v6 = ListenerRow("ipv6", "::", 80, 5, None, 2, "proc")
    assert serving_on([v4, v6], "127.0.0.1") == [v4] and serving_on([v4, v6], "::1") == [v6]
    assert serving_on([v6], "127.0.0.1") == [v6]  # alone, it is taken to be dual-stack (Linux's default)


def test_attach_is_not_refused_for_a_catch_all_listener_that_gets_nothing() -> None:
    """Ours on 127.0.0.1, another process's (a child here) on 0.0.0.0 of the same port: every connection to
    127.0.0.1 is ours. Held the other way round, none is, and the refusal says who holds it."""
    import subprocess
    import sys

    me = os.getpid()
    script = (
        "import socket, sys\n"
        "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)\n"
        "s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(); print('ok', flush=True); sys.stdin.read()\n"
    )
    for ours, theirs, refused in (("127.0.0.1", "0.0.0.0", False), ("0.0.0.0", "127.0.0.1", True)):
        with socket.socket() as probe:  # a port no socket has bound, on any address: the child can bind there
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            probe.bind(("0.0.0.0", 0))
            port = probe.getsockname()[1]
            sock = _socket(ours, None, port)  # bound now: no connection takes it as its local port
        with sock:
            other = subprocess.Popen(
                [sys.executable, "-c", script, theirs, str(port)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
            )
            try:
                assert other.stdout is not None and other.stdout.readline() == b"ok\n"
                if refused:  # (the connections go to the child: test_the_address_bound_before_the_wildcard)
                    with pytest.raises(NotServing, match=f"holds no listener on 127.0.0.1:{port}; it is held by pid"):
                        check_listening("127.0.0.1", port, [me], [me], helpers=())
                else:
                    check_listening("127.0.0.1", port, [me], [me], helpers=())
                    assert landed([sock], "127.0.0.1") == {os.fstat(sock.fileno()).st_ino}  # every one ours
            finally:
                other.kill()
                other.wait(TIMEOUT_S)
                for pipe in (other.stdin, other.stdout):
                    if pipe is not None:
                        pipe.close()
