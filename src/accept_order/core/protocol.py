"""What a client sends and reads, and how a failure is named: shared by both client loops.

A built-in worker answers each connection with one line, `worker I pid P`, and closes; a load of several
requests per connection sends a line (`next`) per request instead, and the worker answers each line with its
own and keeps the connection until the client closes it (`KEEP_LINE`). A real server's
answer can name only its pid (`worker P`, e.g. nginx's `$pid`). Either way the reply is *one* way to
attribute a connection; servers.target.Attribution is where a server says how its connections are
attributed.
"""

from __future__ import annotations

import errno
import os

# Failures that are not an errno of their own.
TIMEOUT = "timeout"
NO_REPLY = "no reply"  # the server closed without a line
BAD_REPLY = "bad reply"  # it sent something that names no worker of this server
ABORTED = "aborted"  # the run stopped (a worker died, Ctrl-C) before this connection finished


def parse_reply(data: bytes) -> tuple[int | None, int] | None:
    """`worker 3 pid 1234` -> (3, 1234); `worker 1234` -> (None, 1234); None for anything else."""
    parts = data.split()
    try:
        if len(parts) >= 4 and parts[0] == b"worker" and parts[2] == b"pid":
            return int(parts[1]), int(parts[3])
        if len(parts) == 2 and parts[0] == b"worker":
            return None, int(parts[1])
    except ValueError:
        return None
    return None


def errno_name(code: int) -> str:
    """`111` -> `ECONNREFUSED`: the key failures are counted under."""
    return errno.errorcode.get(code, f"errno {code}")


def describe_error(name: str) -> str:
    """`ECONNREFUSED` -> `ECONNREFUSED (Connection refused)`; other keys unchanged."""
    code = getattr(errno, name, None)
    return f"{name} ({os.strerror(code)})" if isinstance(code, int) else name


def error_key(exc: OSError) -> str:
    """An OSError as its errno name (or its text when it has no errno)."""
    if exc.errno is None:
        return str(exc) or type(exc).__name__
    return errno_name(exc.errno)


class ClientProtocol:
    """What a client sends after connecting and where the worker's name is in what comes back.

    `line`: nothing is sent; the server writes one line and closes (the built-in workers, the seed's
    Python servers). `http`: an HTTP/1.0 request (so the server closes after its answer, like `nc`), and
    the body after the headers is the line (nginx's `ngx.say("worker ", ngx.worker.pid())`).
    """

    # The server keeps the connection open after its answer (until the client closes it), so that who holds
    # it can still be looked up; otherwise it closes as soon as it has answered.
    keeps_open = False

    def __init__(self, name: str, request: bytes) -> None:
        self.name = name
        self.request = request

    def body(self, reply: bytes) -> bytes:
        return reply

    def closing(self) -> ClientProtocol:
        """The variant in which the server closes after answering: what a load uses, since it reads to EOF."""
        return self

    def persistent(self) -> ClientProtocol | None:
        """The variant that carries several requests over one connection (each `request`, each reply framed
        by `reply_end` instead of the connection's end); None: this protocol has none."""
        return None

    def reply_end(self, data: bytes) -> int:
        """Over a kept connection: the length of the first whole reply at the start of `data`, 0 while it is
        still incomplete. A reply read to EOF needs no framing (this protocol's replies end the connection)."""
        return 0

    def __repr__(self) -> str:
        return f"ClientProtocol({self.name!r})"


class HttpProtocol(ClientProtocol):
    def persistent(self) -> ClientProtocol:
        return HTTP_KEEPALIVE

    def __init__(self, host: str = "accept-order") -> None:
        super().__init__("http", f"GET / HTTP/1.0\r\nHost: {host}\r\nUser-Agent: accept-order\r\n\r\n".encode())

    def body(self, reply: bytes) -> bytes:
        head, sep, body = reply.partition(b"\r\n\r\n")
        if not sep or not head.startswith(b"HTTP/1.") or b" 200 " not in head.split(b"\r\n", 1)[0] + b" ":
            return b""  # no complete head, or not a 200: no worker named
        return body


class KeptLine(ClientProtocol):
    """The built-in workers' line protocol over a kept connection: the client sends `next` per request and
    each answer is one line (its newline ends it)."""

    keeps_open = True

    def __init__(self) -> None:
        super().__init__("line-keepalive", REQUEST_LINE)

    def persistent(self) -> ClientProtocol:
        return self

    def reply_end(self, data: bytes) -> int:
        return data.find(b"\n") + 1


REQUEST_LINE = b"next\n"  # one request over a kept connection (servers/keepalive.py counts its newlines)


class LineProtocol(ClientProtocol):
    def persistent(self) -> ClientProtocol:
        return KEEP_LINE


LINE = LineProtocol("line", b"")
KEEP_LINE = KeptLine()
HTTP = HttpProtocol()
PROTOCOLS = {"line": LINE, "http": HTTP}


class KeepAliveHttp(HttpProtocol):
    """HTTP/1.1 with keep-alive: the server holds the connection open after answering, so the client can
    find which worker holds it before closing (attribution without the server's cooperation)."""

    keeps_open = True

    def __init__(self, host: str = "accept-order") -> None:
        super().__init__(host)
        self.name = "http-keepalive"
        self.request = f"GET / HTTP/1.1\r\nHost: {host}\r\nUser-Agent: accept-order\r\n\r\n".encode()

    def body(self, reply: bytes) -> bytes:
        body = super().body(reply)
        # A chunked body starts with its size line: skip it, so "worker PID" is still found.
        size, sep, rest = body.partition(b"\r\n")
        if sep and size and all(c in b"0123456789abcdefABCDEF" for c in size.strip()):
            return rest
        return body

    def closing(self) -> ClientProtocol:
        return HTTP

    def persistent(self) -> ClientProtocol:
        return self

    def reply_end(self, data: bytes) -> int:
        """The head's end, then Content-Length bytes of body (a chunked body: up to its last, empty chunk)."""
        head_end = data.find(b"\r\n\r\n")
        if head_end < 0:
            return 0
        body_at = head_end + 4
        length: int | None = None
        chunked = False
        for line in data[:head_end].split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length" and value.strip().isdigit():
                length = int(value.strip())
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
        if length is not None and not chunked:
            return body_at + length if len(data) >= body_at + length else 0
        if chunked:
            last = data.find(b"\r\n0\r\n\r\n", body_at - 2)
            return last + 7 if last >= 0 else 0
        return 0  # no length: the reply ends with the connection (not a keep-alive answer)


HTTP_KEEPALIVE = KeepAliveHttp()
