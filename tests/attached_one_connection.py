"""An attached HTTP server's one worker, a thread of the test process, serving one connection as the test scripts it:
the tests of how run --attach --protocol http reads a reply (its holder gone after the answer, its body in a second
segment). The client finds the holder as it does at a real attached server (OwnerAttribution: inet_diag, then this
process's fd table), and a failure in the thread is kept for the test to say, not lost with it.

Imported by name, as conftest's helpers are (tests/ is on sys.path; no test_ prefix, so pytest collects nothing
here)."""

from __future__ import annotations

import os
import socket
import threading

from thread_target import ThreadTarget

from accept_order.core.protocol import HTTP_KEEPALIVE, ClientProtocol
from accept_order.servers.attached_owners import OwnerAttribution

TIMEOUT_S = 20.0


class AttachedOneConnection(ThreadTarget):
    """Accepts one connection, reads the request's head, then hands the connection to `answer`, which a subclass
    writes (what it sends, when, and whether it holds the connection after)."""

    def __init__(self) -> None:
        super().__init__()
        self.owners = OwnerAttribution((os.getpid(),))
        self.failure: BaseException | None = None
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def attribution(self) -> OwnerAttribution:  # type: ignore[override]
        return self.owners

    @property
    def protocol(self) -> ClientProtocol:
        return HTTP_KEEPALIVE

    def answer(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def _serve(self) -> None:
        try:
            self.listener.settimeout(TIMEOUT_S)
            conn, _ = self.listener.accept()
            with conn:
                conn.settimeout(TIMEOUT_S)
                request = b""
                while b"\r\n\r\n" not in request:
                    request += conn.recv(4096)
                self.answer(conn)
        except BaseException as exc:  # said by the test, not lost in the thread
            self.failure = exc

    def close(self) -> None:
        self._thread.join(TIMEOUT_S)
        self.owners.close()
        self.listener.close()
