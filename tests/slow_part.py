"""A part for a client host (loads/hosts/remote_side.py serves a module's `take_part(channel)`) whose task goes on for a
moment after it has answered, as a load's does while its drivers are reaped: tests/test_clients_kept.py."""

from __future__ import annotations

import threading
from typing import Any


def take_part(channel: Any) -> None:
    channel.send(("answered",))
    threading.Event().wait(1.0)  # the task's tail: the channel closes only after it
