"""Whether a running uWSGI's socket at a port speaks uWSGI's own binary protocol, from what it was started with.

`--socket` (`-s`, `--uwsgi-socket`) binds a socket that speaks the uwsgi protocol, the one a web server in front of
uWSGI speaks to it (nginx's uwsgi_pass): each request a binary header, so neither HTTP nor a silent line client is
answered there (pyuwsgi 2.0 logs 'invalid request block size: 21573 (max 4096)...skip' for an HTTP request and
closes it). `--http-socket` speaks HTTP. `--protocol` (`--socket-protocol`) makes the default sockets, `--socket`'s,
speak another protocol (http among them), so where one other than uwsgi is set nothing is said of them; a
`--uwsgi-socket` names its protocol and keeps it (pyuwsgi 2.0 with `--uwsgi-socket :P --protocol http`, or
`--socket :P --protocol uwsgi`, logged 'invalid request block size' for an HTTP request and closed it, as at a bare
--socket). Read as uWSGI reads its options (uwsgi_config.py).
"""

from __future__ import annotations

from ...probes.process_files import Started
from .uwsgi_config import Reading, read

BINARY = frozenset({"socket", "uwsgi-socket"})
DEFAULT = "socket"  # the one whose protocol --protocol sets (uWSGI's 'default sockets'); uwsgi-socket names its own
PROTOCOL = frozenset({"protocol", "socket-protocol"})  # the default sockets' protocol, when not uwsgi's


def binary_at(where: Started, port: int) -> str | None:
    """The option that bound uWSGI's socket at `port` to its binary protocol (`socket = :9000`), as given; None where
    none did, none was read, or a protocol was forced on them."""
    return binary_in(read(where, BINARY | PROTOCOL), port)


def binary_in(reading: Reading, port: int) -> str | None:
    """binary_at of a reading already made: the last socket option naming `port` (ADDRESS:PORT, :PORT, [::]:PORT)."""
    forced = [value for key, value in reading.settings if key in PROTOCOL]
    default_binary = not forced or forced[-1] == "uwsgi"  # the last one given wins
    named = [
        f"{key} = {value}"
        for key, value in reading.settings
        if key in BINARY
        and (key != DEFAULT or default_binary)
        and value is not None
        and value.rpartition(":")[2] == str(port)
    ]
    return named[-1] if named else None
