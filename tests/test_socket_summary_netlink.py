"""The ramp's count of the namespace's TCP sockets per state (after every step) is asked of the kernel over
netlink, where it read /proc/net/tcp{,6} (0.07-0.2 CPU-s a step with the host's 9,000-47,000 TIME_WAITs): the two
must count the same sockets. Checked in a network namespace of its own, whose table holds only what the check
makes (the host's changes between two reads): listeners, a connection at both ends, a TIME_WAIT."""

from __future__ import annotations

import contextlib
import socket

from test_tcp_table import in_a_namespace_of_its_own

from accept_order.probes import sockets


def _ipv6_listener(stack: contextlib.ExitStack) -> int:
    """A listener on ::1 where IPv6 is there: 1, else 0."""
    six = stack.enter_context(socket.socket(socket.AF_INET6, socket.SOCK_STREAM))
    try:
        six.bind(("::1", 0))
    except OSError:
        return 0
    six.listen(1)
    return 1


def _never_read(paths: tuple[str, ...] = ()) -> dict[str, int]:
    raise AssertionError("socket_summary read /proc/net/tcp although netlink answers here")


def _made_and_counted() -> None:
    with contextlib.ExitStack() as stack:
        listener = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        ended = socket.create_connection(listener.getsockname())
        ended_peer, _ = listener.accept()
        ended.close()  # the client closes first: its end goes to TIME_WAIT once the server's closes too
        ended_peer.close()
        stack.enter_context(socket.create_connection(listener.getsockname()))
        stack.enter_context(listener.accept()[0])
        listeners = 1 + _ipv6_listener(stack)
        from_files = sockets.proc_summary()
        sockets.proc_summary = _never_read  # a forked child of its own: nothing else sees the change
        summary = sockets.socket_summary()
        assert summary == from_files, (summary, from_files)
        assert summary == {"listen": listeners, "estab": 2, "time-wait": 1, "total": listeners + 3}, summary


def test_netlink_counts_what_proc_net_tcp_lists() -> None:
    in_a_namespace_of_its_own(_made_and_counted)
