"""Review RG of 7164a13: a connection a signal cut short after the loop had seen its end is recorded as what `close`
would have made of it, its failure too. A bad reply (or none) whose end the loop had seen was kept as 'aborted: the
run stopped before this connection finished', the label 7164a13 corrected for served ones; what is not known to be
whole (no close from the server yet, a reset, or a bad reply whose end was only peeked) stays aborted.

Books.cut is given a real TCP connection whose server end has done its part, and the client's socket is looked at
only once the kernel says the server's close or reset is in (poll with a timeout, no sleep)."""

from __future__ import annotations

import os
import select
import socket
import struct
import time
from collections.abc import Callable
from types import SimpleNamespace

from accept_order.core.measures import ConnectionRecord
from accept_order.core.protocol import LINE
from accept_order.core.target import ReplyAttribution
from accept_order.loads.sequential_books import STOPPED, Books

PID = os.getpid()
REPLY = f"worker 0 pid {PID}\n".encode()
ENDED = select.POLLRDHUP | select.POLLHUP | select.POLLERR


def _close(reply: bytes) -> Callable[[socket.socket], None]:
    def server(conn: socket.socket) -> None:
        conn.sendall(reply)
        conn.close()

    return server


def _reset(reply: bytes) -> Callable[[socket.socket], None]:
    def server(conn: socket.socket) -> None:
        conn.sendall(reply)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        conn.close()

    return server


def cut_after(server: Callable[[socket.socket], None], seen: bool = False) -> ConnectionRecord:
    """The record Books.cut makes of a connection whose server did `server`, once its end is in, the reply read;
    `seen`: the loop had seen its end (and said when)."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        conn, _ = listener.accept()
    started = time.perf_counter_ns()
    server(conn)
    watch = select.poll()
    watch.register(client, select.POLLIN | ENDED)
    assert any(events & ENDED for _, events in watch.poll(10_000)), "the server's end never came"
    client.setblocking(False)
    data = client.recv(1 << 16)  # what was queued comes before a reset
    target = SimpleNamespace(attribution=ReplyAttribution((PID,)), pids=[PID], protocol=LINE)
    books = Books(target, None, None)
    books.cut(0, client, started, data, None, None, None, time.perf_counter_ns() if seen else None)
    assert client.fileno() == -1, "cut closes the socket"
    return books.records[0]


def test_a_whole_reply_then_the_server_s_close_is_served() -> None:
    record = cut_after(_close(REPLY))
    assert record.served and record.worker == 0 and record.error is None, record


def test_a_whole_reply_naming_no_worker_is_its_failure_not_aborted() -> None:
    record = cut_after(_close(b"HTTP/1.1 500 oops\r\n\r\n"), seen=True)
    assert not record.served and record.error == "unexpected reply b'HTTP/1.1 500 oops\\r\\n\\r\\n'", record


def test_a_bad_reply_whose_end_was_only_peeked_stays_aborted() -> None:
    """What was read may be the first part of a reply whose rest a signal lost inside the recv that read it."""
    record = cut_after(_close(b"worker 0 p"))
    assert not record.served and record.error == STOPPED, record


def test_a_close_without_a_reply_is_its_failure_where_the_loop_saw_it() -> None:
    record = cut_after(_close(b""), seen=True)
    assert not record.served and record.error == "closed without a reply", record


def test_nothing_read_before_the_close_stays_aborted() -> None:
    """Without the loop's word, the reply may have been lost inside the recv that read it (test_interrupt_every_line
    raises there): not said to be the server's failure."""
    record = cut_after(_close(b""))
    assert not record.served and record.error == STOPPED, record


def test_a_reset_after_the_reply_stays_aborted() -> None:
    record = cut_after(_reset(REPLY))
    assert not record.served and record.error == STOPPED, record
