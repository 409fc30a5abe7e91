"""What a running threaded server's own config says of handing each connection a thread accepts on to another
thread (HAProxy's tune.listener.multi-queue), which /proc does not show: read by the kind while the server runs
(ServerKind.handoff_read), saved with observe's result, so its verdict and `show` of the file say the same."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HandOffRead:
    """`hands_on`: True where the config leaves the hand-off on, False where it turns it off or runs one thread (the
    thread that accepts a connection serves it), None where it is not known: a config file could not be read (none:
    the server's default), one read was changed after the server started, or the setting is in a block not decided;
    `said`: the config's words, with its files ('its config (/etc/haproxy/haproxy.cfg) turns
    tune.listener.multi-queue off'); `doubts`: what the reading could not settle (a file not read, a setting not
    decided, a file changed after the server started)."""

    hands_on: bool | None
    said: str
    doubts: tuple[str, ...] = ()
