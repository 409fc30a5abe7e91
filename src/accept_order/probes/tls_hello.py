"""Whether a port speaks TLS: one handshake, as a client that checks no certificate, offering HTTP/2 and
HTTP/1.1 by ALPN. The load speaks plain HTTP/1.1, so a run attached to an HTTPS port serves nothing, and
what the server does with the plain request is its own: nginx answers '400 The plain HTTP request was sent to
HTTPS port', Caddy 400, h2o and HAProxy close without a word. Only the handshake tells them all apart from a
plain server that refuses '/'. HTTP/2 in the clear (h2c with prior knowledge: nginx's 'listen ... http2' without
ssl, HAProxy's 'bind ... proto h2', which h2load drives at an http:// URL) fails it too: nginx sends its SETTINGS
and a GOAWAY, HAProxy closes; the HTTP/2 preface, answered by a SETTINGS frame, tells it apart."""

from __future__ import annotations

import socket
import ssl
from dataclasses import dataclass

HANDSHAKE_S = 2.0  # a server that neither answers nor closes is no TLS server this look can tell


@dataclass(frozen=True)
class TlsSpoken:
    """A completed handshake: the protocol version and what ALPN chose ('' where the server chose none)."""

    version: str
    alpn: str

    @property
    def said(self) -> str:
        """'TLS (TLSv1.3, ALPN h2: HTTP/2)'."""
        alpn = {"h2": "ALPN h2: HTTP/2", "http/1.1": "ALPN http/1.1"}.get(self.alpn, "no ALPN")
        return f"TLS ({self.version}, {alpn})"

    listen = "TLS"  # the listen a plain one goes beside
    unmeasured = "the TLS handshakes and HTTP/2's streams over one connection"


@dataclass(frozen=True)
class H2cSpoken:
    """HTTP/2 without TLS: the port answered the HTTP/2 connection preface with a SETTINGS frame."""

    said = "HTTP/2 without TLS (h2c: it answered the HTTP/2 preface with a SETTINGS frame)"
    listen = "http2"
    unmeasured = "HTTP/2's streams over one connection"


# RFC 9113 3.4: the client's preface, then a SETTINGS frame (here empty: a frame header of length 0, type 0x4, no
# flags, stream 0); a server's preface is a SETTINGS frame, which the first 9 bytes back must be
PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes((0, 0, 0, 4, 0, 0, 0, 0, 0))
FRAME_HEAD = 9
SETTINGS, ACK = 0x4, 0x1


def speaks_tls(host: str, port: int, timeout_s: float = HANDSHAKE_S) -> TlsSpoken | None:
    """The handshake's outcome at host:port, or None where none completed (a plain server answers the
    ClientHello with something that is no TLS record; nothing listens; it timed out)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # any certificate: the question is the protocol, not whom to trust
    context.set_alpn_protocols(["h2", "http/1.1"])
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as raw:
            with context.wrap_socket(raw, server_hostname=host) as tls:
                return TlsSpoken(tls.version() or "TLS", tls.selected_alpn_protocol() or "")
    except (OSError, ValueError):  # ssl.SSLError is an OSError; ValueError: a name wrap_socket refuses
        return None


def speaks_h2c(host: str, port: int, timeout_s: float = HANDSHAKE_S) -> H2cSpoken | None:
    """H2cSpoken where host:port answers the HTTP/2 preface with a SETTINGS frame on stream 0 (not an ACK, a
    whole number of 6-byte settings); None otherwise (an HTTP/1.1 server answers 400 or closes; nothing listens;
    it timed out)."""
    head = b""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as raw:
            raw.sendall(PREFACE)
            while len(head) < FRAME_HEAD:
                chunk = raw.recv(FRAME_HEAD - len(head))
                if not chunk:
                    return None
                head += chunk
    except OSError:
        return None
    length, kind, flags = int.from_bytes(head[:3], "big"), head[3], head[4]
    stream = int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
    return H2cSpoken() if kind == SETTINGS and not flags & ACK and stream == 0 and length % 6 == 0 else None
