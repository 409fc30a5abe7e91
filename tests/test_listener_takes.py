"""probes/listeners.takes, the rule for which listener takes connections to an address, against the kernel's own
answer: real listeners (an IPv6-only `::`, a dual-stack `::`, `0.0.0.0`, a loopback), a real connect to each
address, and whether that listener's accept queue got it. --attach refuses a listener that would not get them."""

from __future__ import annotations

import contextlib
import errno
import os
import socket
from collections.abc import Iterator

import pytest
from conftest import needs_ipv6

from accept_order.core.errors import NotServing
from accept_order.probes.listeners import listening_sockets, parse_proc_net_tcp, takes
from accept_order.servers.attached_listening import check_listening

HOSTS = ("127.0.0.1", "::1", "::ffff:127.0.0.1")


@contextlib.contextmanager
def listener(address: str, v6only: bool | None = None) -> Iterator[socket.socket]:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        if v6only is not None:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, int(v6only))
        sock.bind((address, 0))
        sock.listen(8)
        yield sock
    finally:
        sock.close()


def kernel_takes(sock: socket.socket, host: str) -> bool:
    """Whether a connection to host:port lands in `sock`'s accept queue (nothing else listens on its port)."""
    port = sock.getsockname()[1]
    client = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        client.settimeout(5.0)
        if client.connect_ex((host, port)) == errno.ECONNREFUSED:
            return False
        sock.settimeout(5.0)
        sock.accept()[0].close()  # the kernel put it in this queue: accept returns it
        return True
    finally:
        client.close()


def row_of(sock: socket.socket):  # type: ignore[no-untyped-def]
    rows = [row for row in listening_sockets(sock.getsockname()[1]) if row.inode == os.fstat(sock.fileno()).st_ino]
    assert len(rows) == 1, rows
    return rows[0]


@needs_ipv6
@pytest.mark.parametrize(
    ("address", "v6only"), [("::", True), ("::", False), ("0.0.0.0", None), ("127.0.0.1", None), ("::1", True)]
)
def test_takes_what_the_kernel_delivers(address: str, v6only: bool | None) -> None:
    with listener(address, v6only) as sock:
        row = row_of(sock)
        said = {host: takes(row, host) for host in HOSTS}
        assert said == {host: kernel_takes(sock, host) for host in HOSTS}


@needs_ipv6
def test_inet_diag_says_v6only() -> None:
    with listener("::", True) as only, listener("::", False) as dual:
        assert (row_of(only).v6only, row_of(dual).v6only) == (True, False)


def test_proc_rows_do_not_know_v6only_and_take_the_wildcard_for_dual_stack() -> None:
    text = (
        "  sl  local_address                         remote_address                        st tx_queue rx_queue tr "
        "tm->when retrnsmt   uid  timeout inode\n"
        "   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 "
        "00:00000000 00000000     0        0 4242 1 0000000000000000 100 0 0 10 0\n"
    )
    (row,) = parse_proc_net_tcp(text, "ipv6")
    assert row.v6only is None and takes(row, "127.0.0.1") and takes(row, "::1")


@needs_ipv6
def test_attach_refuses_an_ipv6_only_listener_for_an_ipv4_host() -> None:
    me = os.getpid()
    with listener("::", True) as sock:
        port = sock.getsockname()[1]
        check_listening("::1", port, [me], [me], helpers=())  # takes ::1: attached
        with pytest.raises(NotServing, match="holds no listener on 127.0.0.1"):
            check_listening("127.0.0.1", port, [me], [me], helpers=())


def test_attach_refuses_an_ipv4_wildcard_for_an_ipv6_host() -> None:
    me = os.getpid()
    with listener("0.0.0.0") as sock:
        port = sock.getsockname()[1]
        check_listening("127.0.0.1", port, [me], [me], helpers=())
        with pytest.raises(NotServing, match=r"holds no listener on \[::1\]"):
            check_listening("::1", port, [me], [me], helpers=())
