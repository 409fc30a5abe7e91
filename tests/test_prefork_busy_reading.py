"""inspect of Apache prefork with every child busy (keep-alive load: each child serves one kept connection to its
end) read 'epoll-herd (apache's event)': a prefork child holds an epoll that watches its one listener (APR's
pollset, made for two or more Listens) and never waits in it, and a running child was taken for that epoll's
waiter. A blocking listener (O_NONBLOCK clear, which /proc/PID/fdinfo shows) is accepted from in accept(): a
running thread of a process whose listeners are all blocking is read as an accept() waiter, and a poll set it
could not read is not taken to be them."""

from __future__ import annotations

import os
import socket

import pytest
from conftest import wait_for
from ended_at_once import end_at_once

from accept_order.analysis.mechanism import classify
from accept_order.analysis.mechanism_values import Listener, Seen
from accept_order.core.spec import ServerSpec
from accept_order.experiments.inspect.run import inspect
from accept_order.experiments.inspect.sample import resolve
from accept_order.probes.fd_table import OpenFile
from accept_order.probes.file_flags import blocking_mode, parse_flags
from accept_order.probes.proc_waits import ThreadWait, thread_wait
from accept_order.servers.launched.apache import ApacheServer
from accept_order.servers.launched.apache_config import apache_missing
from accept_order.servers.registry import checked

LISTENER = 4242
FILES = {
    3: OpenFile(3, "socket", LISTENER),
    6: OpenFile(
        6, "eventpoll", fdinfo=f"tfd:        3 events:       19 data:                3  pos:0 ino:{LISTENER:x}"
    ),
    7: OpenFile(7, "socket", 5151),  # the kept connection
}
HELD = frozenset({LISTENER})


def seen(wait: ThreadWait, blocking: frozenset[int]) -> Seen:
    return resolve(100, wait, FILES, HELD, {}, 1, HELD, blocking)


def test_a_running_child_of_a_blocking_listener_is_an_accept_waiter_not_its_epolls() -> None:
    running = ThreadWait(100, "apache2", "running")
    assert seen(running, HELD).via == "accept" and seen(running, HELD).listeners == HELD
    # a nonblocking listener: as before, the running thread is taken for its epoll's waiter
    assert seen(running, frozenset()).via == "epoll"


def test_an_unread_poll_set_is_not_taken_to_be_a_blocking_listener() -> None:
    polling = ThreadWait(100, "apache2", "poll", 7, wchan="do_poll", fds=None)  # the set was not readable
    assert seen(polling, HELD).via == "other"
    assert seen(polling, frozenset()).via == "poll"  # a nonblocking one: taken to be the listeners it holds
    read = ThreadWait(100, "apache2", "poll", 7, wchan="do_poll", fds=(3,))  # a set read: what it says
    assert seen(read, HELD).via == "poll"


def _child(pid: int, call: str) -> Seen:
    return Seen(pid, pid, call, "accept", listeners=HELD, holds=HELD)


def test_the_evidence_says_why_running_children_count() -> None:
    listener = [Listener(LISTENER, "127.0.0.1", 80)]
    parent = {101: 100, 102: 100, 103: 100}
    verdict = classify([_child(101, "running"), _child(102, "running")], listener, parent, {})
    assert verdict.mechanism == "blocking", verdict
    assert verdict.evidence == (
        "2 workers are running at the look, holding the listener as a blocking socket, which is accepted from in "
        "accept(): where they wait between connections",
    )
    mixed = classify([_child(101, "accept4"), _child(102, "running"), _child(103, "accept4")], listener, parent, {})
    assert mixed.evidence == (
        "2 workers sleep in accept4() on the listener itself, and 1 more is running at the look: the listener is a "
        "blocking socket, which is accepted from in accept()",
    )
    asleep = classify([_child(101, "accept4"), _child(102, "accept4")], listener, parent, {})
    assert asleep.evidence == ("2 workers sleep in accept4() on the listener itself",)


def test_the_mode_is_read_from_fdinfo() -> None:
    assert parse_flags(b"pos:\t0\nflags:\t02004002\nmnt_id:\t10\n") == 0o2004002
    assert parse_flags(b"") is None
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        assert blocking_mode(os.getpid(), sock.fileno()) is True
        sock.setblocking(False)
        assert blocking_mode(os.getpid(), sock.fileno()) is False
    assert blocking_mode(os.getpid(), 1_000_000) is None


REQUEST = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
WORK_US = 6_000_000  # long enough for the look on a busy machine; the children spin, then answer


@pytest.mark.skipif(apache_missing() is not None, reason=f"Apache launched runs: {apache_missing()}")
def test_prefork_with_every_child_busy_reads_blocking() -> None:
    """Both children of a 2-child prefork in their handler's busy loop at once (a kept connection each): the
    look sees no child in accept(), only two running processes whose epoll watches the listener."""
    spec = checked(ServerSpec(kind="apache", mode="prefork", workers=2, work_us=WORK_US, keepalive=True))
    with ApacheServer(spec) as server:
        clients = [socket.create_connection(server.address, timeout=30) for _ in server.pids]
        try:
            for client in clients:
                client.sendall(REQUEST)
            wait_for(
                lambda: [thread_wait(pid, pid).call for pid in server.pids],
                lambda calls: calls == ["running"] * len(calls),
                10,
                "both children in their handler's busy loop",
            )
            result = inspect(port=server.port)
        finally:
            for client in clients:
                client.close()
            end_at_once(server)  # its close() would wait up to 2 s for the spinning children
    assert result.mechanism.name == "blocking", result.mechanism
    assert result.mechanism.modes == ("prefork",)
    assert "running at the look, holding the listener as a blocking socket" in result.mechanism.evidence[0]
