"""A listener in a process of its own, for tests that want a pid holding it (latency --attach, observe): a Python
script run with -c that prints 'port N' once it listens, killed when the test ends (by the kernel too, if pytest is
killed, even by SIGKILL).

One copy for the tests that each started such a process by hand (an empty 200, a 404, a listener that never
accepts). Imported by name, as conftest's helpers are (tests/ is on sys.path; no test_ prefix, so pytest collects
nothing here)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from cluster import dies_with
from conftest import OutputReader

TIMEOUT_S = 20.0

# One reply (argv[1], unicode_escape'd) to every request, the request read first (a reply sent before it would meet
# a reset), each connection closed after it
REPLYING = """
import socket, sys
reply = sys.argv[1].encode().decode("unicode_escape").encode("latin-1")
listener = socket.create_server(("127.0.0.1", 0), backlog=64)
print("port", listener.getsockname()[1], flush=True)
while True:
    conn, _ = listener.accept()
    with conn:
        conn.settimeout(5)
        try:
            conn.recv(4096)
            conn.sendall(reply)
        except OSError:
            pass
"""

# A listener with a backlog of 1 that never accepts (nor defers): its queue is full after two handshakes, and it drops
# the rest; it waits on its stdin
NEVER_ACCEPTING = """
import socket, sys
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(1)
print("port", listener.getsockname()[1], flush=True)
sys.stdin.read()
"""


@contextmanager
def listening(script: str, *args: str) -> Iterator[tuple[int, int]]:
    """(pid, port) of `python -c script args` once it said its port; its stdin a pipe it may wait on."""
    proc = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        bufsize=1,
        preexec_fn=dies_with(os.getpid()),
    )
    try:
        assert proc.stdout is not None
        port = int(OutputReader(proc.stdout).wait_for(r"port (\d+)\n", TIMEOUT_S).group(1))
        yield proc.pid, port
    finally:
        proc.kill()
        proc.wait(10)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


@contextmanager
def replying(reply: bytes) -> Iterator[tuple[int, int]]:
    """(pid, port) of a process answering `reply` to everything."""
    with listening(REPLYING, reply.decode("latin-1").encode("unicode_escape").decode()) as server:
        yield server
