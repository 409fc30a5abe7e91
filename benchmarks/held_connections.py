"""N idle keep-alive HTTP connections held open to a server by a process of their own, for a benchmark's
whole run (bench_observe_overhead.py --open N).

Each connection makes one `GET / HTTP/1.1` first and reads its whole answer, so that the server holds it
in keep-alive (an accepted connection that never sent a request would be held by a different timer,
client_header_timeout in nginx), then stays idle. The client ends live in this process, not in the
benchmark's: the hard open-file limit here is per process (20,000), and the benchmark's own descriptors
and the load's stay out of it. The process says `held N` on its stdout once every connection is open and
answered, then waits for its stdin to close: the benchmark closing the pipe, or dying, ends it, and its
exit closes every connection.

Run as a script (what `Held` does): python benchmarks/held_connections.py HOST PORT N
"""

from __future__ import annotations

import os
import resource
import select
import socket
import subprocess
import sys
from pathlib import Path
from types import TracebackType

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "experiments"))  # the one-line parser

from _cli import OneLineParser, positive_int  # noqa: E402  (experiments/_cli.py)

READY_TIMEOUT_S = 300.0  # 10,000 connections open in about 2 s here; a busy machine gets much longer
STOP_TIMEOUT_S = 30.0
BATCH = 200  # connections opened and answered together: the listen queue (backlog 511) never fills
REQUEST = b"GET / HTTP/1.1\r\nHost: held\r\n\r\n"
IO_TIMEOUT_S = 30.0


class Held:
    """The holding process, started for a `with` block: __enter__ returns once it holds every connection
    (SystemExit with its reason otherwise); __exit__ closes its stdin and waits for it to end."""

    def __init__(self, host: str, port: int, count: int) -> None:
        self.count = count
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), host, str(port), str(count)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def __enter__(self) -> Held:
        assert self.proc.stdout is not None
        ready = select.select([self.proc.stdout], [], [], READY_TIMEOUT_S)[0]
        line = self.proc.stdout.readline().strip() if ready else f"nothing in {READY_TIMEOUT_S:g} s"
        if line != f"held {self.count}":
            self.close()
            raise SystemExit(f"held_connections.py: error: {self.count:,} connections not held: {line}")
        return self

    def close(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()  # its signal to exit
        try:
            self.proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def answered(conn: socket.socket) -> None:
    """Read one answer to REQUEST whole (Content-Length or chunked); ValueError if it is not a kept 200."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += _more(conn)
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    if not lines[0].startswith("HTTP/1.1 200"):
        raise ValueError(f"answered {lines[0]!r}")
    fields = {k.strip().lower(): v.strip().lower() for k, _, v in (line.partition(":") for line in lines[1:])}
    if fields.get("connection") == "close":
        raise ValueError("the server closes the connection after its answer (no keep-alive)")
    if "content-length" in fields:
        while len(body) < int(fields["content-length"]):
            body += _more(conn)
    elif fields.get("transfer-encoding") == "chunked":
        while not body.endswith(b"0\r\n\r\n"):
            body += _more(conn)


def _more(conn: socket.socket) -> bytes:
    chunk = conn.recv(65536)
    if not chunk:
        raise ValueError("the server closed the connection before its answer ended")
    return chunk


def hold(host: str, port: int, count: int) -> list[socket.socket]:
    """`count` connections, each answered once and kept; OSError or ValueError when one fails."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < count + 64:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    held: list[socket.socket] = []
    while len(held) < count:
        batch = [socket.socket(family, socket.SOCK_STREAM) for _ in range(min(BATCH, count - len(held)))]
        held += batch  # closed at exit whatever happens next
        for conn in batch:
            conn.settimeout(IO_TIMEOUT_S)
            conn.connect((host, port))
            conn.sendall(REQUEST)
        for conn in batch:
            answered(conn)
    return held


def main(argv: list[str]) -> int:
    parser = OneLineParser(prog="held_connections.py", description="hold N idle keep-alive connections open")
    parser.add_argument("host")
    parser.add_argument("port", type=positive_int)
    parser.add_argument("count", type=positive_int)
    args = parser.parse_args(argv)
    host, port, count = args.host, args.port, args.count
    try:
        held = hold(host, port, count)
    except (OSError, ValueError) as exc:
        print(f"failed: {exc}", flush=True)
        return 1
    print(f"held {len(held)}", flush=True)
    sys.stdin.read()  # until the benchmark closes the pipe (or dies)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
