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
EMPTY_200 = f"{BAD_REPLY} (a 200 with an empty body)"  # HTTP: answered, with nothing a worker could be named by
HTTP_ANSWER = f"{BAD_REPLY} (an HTTP answer: the server speaks HTTP, which --protocol http sends)"  # to a line client

# How the rows of a server known by its replies were numbered (a result's evidence.rows_by), which says how merge
# matches two files' rows (results/merge_rows.py). INDEX: every reply named its worker's index (`worker I pid P`),
# and each row is that index, the server's own numbering: two runs' row i is worker i, whatever its pid. PID: the
# tool numbered them from the pids the replies named (`worker P`: the order they first answered, or pid order
# over several driver processes), so only a pid says which worker of one run is which of another's.
ROWS_BY_INDEX = "index"
ROWS_BY_PID = "pid"


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

    def complaint(self, reply: bytes) -> str:
        """Why `reply` names no worker, as the failure it is counted under (a few fixed keys per protocol,
        never the reply's own text: one key per distinct reply would flood the report)."""
        return BAD_REPLY

    def failure(self, raw: bytes, reply: bytes) -> str:
        """What a connection whose reply named no worker counts as: `raw`, the bytes read; `reply`, what `body` kept
        of them. Nothing read: no reply; something kept: a bad reply; something read and nothing kept (an HTTP error
        status): the complaint, which names it (an attached Apache's 404s read '500 x no reply')."""
        if not raw:
            return NO_REPLY
        return BAD_REPLY if reply else self.complaint(raw)

    def closes(self, reply: bytes) -> bool:
        """Over a kept connection: whether the server said, in this whole reply, that it closes the connection
        after it (the client then opens another for the next request). A line says nothing of the kind."""
        return False

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

    def complaint(self, reply: bytes) -> str:
        """`bad reply (HTTP 503)` for an answer that is not a 200, else what is wrong with it."""
        status = reply.split(b"\r\n", 1)[0].split()
        if not reply.startswith(b"HTTP/1.") or len(status) < 2:
            return f"{BAD_REPLY} (not an HTTP answer)"
        code = status[1].decode("ascii", "replace")[:3]
        if code != "200":
            return f"{BAD_REPLY} (HTTP {code if code.isdigit() else '?'})"
        if b"\r\n\r\n" in reply and not self.body(reply):  # nginx's 'return 200;' (a body is all attaching needs)
            return EMPTY_200
        return f"{BAD_REPLY} (a 200 whose body names no worker of this server)"


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

    def body(self, reply: bytes) -> bytes:
        """The line, but for an HTTP status line, which no line server writes: an HTTP server answering `next` (nginx:
        'HTTP/1.1 400 Bad Request'), attached with the default --protocol line and --pool, had each such line counted
        served (11,794 of nginx's 400s, the rest of each answer read as the next request's 'no reply', exit 0)."""
        return b"" if reply.startswith(b"HTTP/1.") else reply

    def complaint(self, reply: bytes) -> str:
        return HTTP_ANSWER if reply.startswith(b"HTTP/1.") else BAD_REPLY


REQUEST_LINE = b"next\n"  # one request over a kept connection (servers/keepalive.py counts its newlines)


class LineProtocol(ClientProtocol):
    def persistent(self) -> ClientProtocol:
        return KEEP_LINE


LINE = LineProtocol("line", b"")
KEEP_LINE = KeptLine()
HTTP = HttpProtocol()
PROTOCOLS = {"line": LINE, "http": HTTP}


class KeepAliveHttp(HttpProtocol):
    """HTTP/1.1 with keep-alive (a Host header, no `Connection: close`): the server holds the connection open
    after answering, for the next request or so that the client can find which worker holds it before
    closing (attribution without the server's cooperation). Each reply ends where its head says: after
    Content-Length bytes of body, or after the last (empty) chunk of a chunked one (nginx's Lua `ngx.say`)."""

    keeps_open = True

    def __init__(self, host: str = "accept-order") -> None:
        super().__init__(host)
        self.name = "http-keepalive"
        self.request = f"GET / HTTP/1.1\r\nHost: {host}\r\nUser-Agent: accept-order\r\n\r\n".encode()

    def body(self, reply: bytes) -> bytes:
        body = super().body(reply)
        if not body or not _chunked(reply.partition(b"\r\n\r\n")[0]):
            return body
        # A reply read to EOF may be cut short: what was whole of it, so that "worker PID" is still found.
        return _dechunk(body, whole=False) or b""

    def closing(self) -> ClientProtocol:
        return HTTP

    def persistent(self) -> ClientProtocol:
        return self

    def reply_end(self, data: bytes) -> int:
        """The head's end, then Content-Length bytes of body, or a chunked body up to its last, empty chunk
        and the blank line after it; 0 while incomplete. A head with neither says its body ends with the
        connection (not a keep-alive answer): 0, and the client's timeout or the server's close ends it."""
        if not b"HTTP/".startswith(data[:5]):
            # not an HTTP answer, which nothing frames: whole as read, where waiting for a head's end let a
            # greeting held open ('220 hello', a Node net server) read 'timeout: no answer within 2 s'
            return len(data)
        head_end = data.find(b"\r\n\r\n")
        if head_end < 0:
            return 0
        body_at = head_end + 4
        head = data[:head_end]
        if head.split(b"\r\n", 1)[0].split(b" ")[1:2] in ([b"204"], [b"304"]):
            # no body, whatever the head says (RFC 9112 §6.3): nginx's 'return 204' over keep-alive has no length,
            # and a reply read to its framed end (c8d1b81) waited out --timeout for a body that never comes ('3 ×
            # timeout: no answer within 3 s' for three 204s in its access log, 'bad reply (HTTP 204)' before)
            return body_at
        if _chunked(head):
            size = _chunked_size(data, body_at)
            return body_at + size if size is not None else 0
        length = _content_length(head)
        if length is None:
            return 0
        return body_at + length if len(data) >= body_at + length else 0

    def closes(self, reply: bytes) -> bool:
        """`Connection: close` in the reply's head, or an HTTP/1.0 answer without `Connection: keep-alive`
        (RFC 9112 §9.3: the server will close after it)."""
        head = reply.partition(b"\r\n\r\n")[0]
        old = head.startswith(b"HTTP/1.0")
        if b"connection" not in head.lower():  # the common case, one scan: nothing said, 1.1 keeps
            return old
        tokens = {
            token.strip().lower()
            for name, value in _headers(head)
            if name == b"connection"
            for token in value.split(b",")
        }
        return b"close" in tokens or (old and b"keep-alive" not in tokens)


def _headers(head: bytes) -> list[tuple[bytes, bytes]]:
    """(lower-case name, value) of each header line after the status line."""
    fields = []
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        fields.append((name.strip().lower(), value.strip()))
    return fields


def _chunked(head: bytes) -> bool:
    return any(name == b"transfer-encoding" and b"chunked" in value.lower() for name, value in _headers(head))


def _content_length(head: bytes) -> int | None:
    for name, value in _headers(head):
        if name == b"content-length" and value.isdigit():
            return int(value)
    return None


def _chunk_sizes(data: bytes, at: int) -> tuple[list[tuple[int, int]], int | None]:
    """The chunks of a chunked body from `at`: [(start, size)] of each whole one, and the length of the
    whole body (through the last chunk's trailer and blank line), None while it is incomplete. A size line
    that is not hex (a framing error) ends it as incomplete: the client's timeout names it."""
    chunks: list[tuple[int, int]] = []
    while True:
        line_end = data.find(b"\r\n", at)
        if line_end < 0:
            return chunks, None
        size_text = data[at:line_end].split(b";", 1)[0].strip()  # a chunk extension follows ';'
        try:
            size = int(size_text, 16)
        except ValueError:
            return chunks, None
        if size == 0:
            # the trailer: header lines, each ending in CRLF, then an empty line
            at = line_end + 2
            while True:
                end = data.find(b"\r\n", at)
                if end < 0:
                    return chunks, None
                if end == at:
                    return chunks, end + 2
                at = end + 2
        start = line_end + 2
        if len(data) < start + size + 2:
            return chunks, None
        chunks.append((start, size))
        at = start + size + 2


def _chunked_size(data: bytes, body_at: int) -> int | None:
    """The length of the chunked body at `body_at`, None while incomplete."""
    end = _chunk_sizes(data, body_at)[1]
    return None if end is None else end - body_at


def _dechunk(body: bytes, whole: bool = True) -> bytes | None:
    """A chunked body's content; None when it is incomplete (`whole`), else what its whole chunks hold."""
    chunks, end = _chunk_sizes(body, 0)
    if end is None and whole:
        return None
    return b"".join(body[start : start + size] for start, size in chunks)


HTTP_KEEPALIVE = KeepAliveHttp()
