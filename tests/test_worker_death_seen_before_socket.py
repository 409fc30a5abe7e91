"""Review RM of 18bdf9c: a worker that answers, closes and exits has served its connection, even when the
one-at-a-time loop sees its death before it looks at the socket.

18bdf9c came with no test of its own (only test_attach_line's worker-exit test, which hits the window in about
1 run of 9 under load). Here the window is made certain: the 'worker' is a thread that answers connection
LEAVER_AT, closes it and then makes the death watch readable, all while the client is held in the record of
the connection before (its on_record runs after the next connect, by design); the death is looked at on every
pass (DEATH_CHECK_MS 0), so the loop's first look after that record sees the death with the reply already in
the socket. Before 18bdf9c that connection ended aborted ('stopped'), its reply unread.
"""

from __future__ import annotations

import os
import threading

import pytest
from thread_target import ThreadTarget

from accept_order.core.errors import WorkerError
from accept_order.core.measures import ConnectionRecord
from accept_order.core.spec import SequentialLoad
from accept_order.loads import sequential
from accept_order.loads.sequential import run_sequential

CONNECTIONS = 6
LEAVER_AT = 2  # the worker answers this connection, closes it, then exits
WAIT_S = 10.0  # generous: the thread has one accept and one send to do


class _LeavingServer(ThreadTarget):
    """A Target whose one worker is a thread that answers each connection with its line and closes it; after
    answering connection LEAVER_AT it 'exits': its death descriptor (a pipe) becomes readable and check_alive
    raises from then on."""

    def __init__(self) -> None:
        super().__init__()
        self.listener.settimeout(WAIT_S)  # a client that never connects ends the thread, not the suite
        self._death_r, self._death_w = os.pipe()
        self.exited = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def check_alive(self) -> None:
        if self.exited.is_set():
            raise WorkerError("worker 0 exited", 0)

    def death_fds(self) -> list[int]:
        return [self._death_r]

    def _serve(self) -> None:
        for _ in range(LEAVER_AT + 1):
            conn, _ = self.listener.accept()
            conn.sendall(self._reply)
            conn.close()  # the reply and the FIN are in the client's socket before the death is
        self.exited.set()
        os.write(self._death_w, b"x")

    def close(self) -> None:
        self._thread.join(WAIT_S)
        self.listener.close()
        os.close(self._death_r)
        os.close(self._death_w)


def test_a_death_seen_before_the_socket_keeps_the_reply_already_there(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sequential, "DEATH_CHECK_MS", 0)  # the death watch looked at on every pass
    server = _LeavingServer()
    seen: list[ConnectionRecord] = []

    def on_record(record: ConnectionRecord) -> None:
        seen.append(record)
        if record.seq == LEAVER_AT - 1:  # recorded after LEAVER_AT's connect: hold the client until it exited
            assert server.exited.wait(WAIT_S), "the server thread did not answer and exit"

    try:
        load = SequentialLoad(connections=CONNECTIONS, gap_ms=0, settle=False).validated()
        with pytest.raises(WorkerError, match="worker 0 exited"):
            run_sequential(server, load, on_record)
    finally:
        server.close()
    by_seq = {r.seq: r for r in seen}
    assert sorted(by_seq) == list(range(LEAVER_AT + 1)), seen  # no hole, nothing after the death
    leaver = by_seq[LEAVER_AT]
    assert leaver.error is None and leaver.worker == 0, leaver  # served: its reply was in the socket
    assert all(r.served for r in seen), seen
