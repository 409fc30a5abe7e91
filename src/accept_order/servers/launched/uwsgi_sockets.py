"""Whether a running uWSGI's socket at a port speaks uWSGI's own binary protocol, from what it was started with.

`--socket` (`-s`, `--uwsgi-socket`) binds a socket that speaks the uwsgi protocol, the one a web server in front of
uWSGI speaks to it (nginx's uwsgi_pass): each request a binary header, so neither HTTP nor a silent line client is
answered there (pyuwsgi 2.0 logs 'invalid request block size: 21573 (max 4096)...skip' for an HTTP request and
closes it). `--http-socket` speaks HTTP. `--protocol` (`--socket-protocol`) makes those sockets speak another
protocol (http among them), so where it is set nothing is said. Read as uWSGI reads its options (uwsgi_config.py).
"""

from __future__ import annotations

from ...probes.process_files import Started
from .uwsgi_config import Reading, read

BINARY = frozenset({"socket", "uwsgi-socket"})
PROTOCOL = frozenset({"protocol", "socket-protocol"})  # another protocol forced on those sockets


def binary_at(where: Started, port: int) -> str | None:
    """The option that bound uWSGI's socket at `port` to its binary protocol (`socket = :9000`), as given; None where
    none did, none was read, or a protocol was forced on them."""
    return binary_in(read(where, BINARY | PROTOCOL), port)


def binary_in(reading: Reading, port: int) -> str | None:
    """binary_at of a reading already made: the last socket option naming `port` (ADDRESS:PORT, :PORT, [::]:PORT)."""
    if any(key in PROTOCOL for key, _ in reading.settings):
        return None
    named = [
        f"{key} = {value}"
        for key, value in reading.settings
        if key in BINARY and value is not None and value.rpartition(":")[2] == str(port)
    ]
    return named[-1] if named else None
