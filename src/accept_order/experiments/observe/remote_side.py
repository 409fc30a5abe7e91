"""observe's part on the server's host (--observe-on), taken through loads/hosts/remote_side.py's
bootstrap (`take_part(channel)`):

    coordinator -> ("observe", port, longest seconds)
    host -> ("watching",)                       its probes are on: the load may start
    coordinator -> ("stop",)                    the load is over
    host -> ("result", pickled ObserveResult)   or ("error", one line)

The channel closing (the coordinator gone) ends the observation too; nothing is sent to the server and
nothing signals it, as with observe on its own.
"""

from __future__ import annotations

import pickle
import threading
from typing import Any

from ...core.errors import AcceptOrderError
from ...loads.hosts.remote_side import CLOSED
from ..session import RunInterrupted
from .api import observe
from .result import ObserveResult


def take_part(channel: Any) -> None:
    message = channel.receive()
    if message[0] != "observe":
        return
    port, longest_s = int(message[1]), float(message[2])
    until = threading.Event()
    channel.setcallback(lambda _message: until.set(), endmarker=CLOSED)  # a stop, or the channel's end
    attached = threading.Event()

    def first(_result: ObserveResult) -> None:
        if not attached.is_set():
            attached.set()
            channel.send(("watching",))

    try:
        result = observe(port=port, duration_s=longest_s, on_snapshot=first, until=until)
    except RunInterrupted as stop:
        result = stop.results[0]
    except AcceptOrderError as exc:
        channel.send(("error", str(exc)))
        return
    channel.send(("result", pickle.dumps(result)))
