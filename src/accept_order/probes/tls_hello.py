"""Whether a port speaks TLS: one handshake, as a client that checks no certificate, offering HTTP/2 and
HTTP/1.1 by ALPN. The load speaks plain HTTP/1.1, so a run attached to an HTTPS port serves nothing, and
what the server does with the plain request is its own: nginx answers '400 The plain HTTP request was sent to
HTTPS port', Caddy 400, h2o and HAProxy close without a word. Only the handshake tells them all apart from a
plain server that refuses '/'."""

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
