"""The pool's turns (loads/kept.py): the drivers fill their shares one after another, from a shared counter
holding the index of the driver whose turn it is, so the whole pool fills in one order; the load then starts
once every share is open."""

from __future__ import annotations

import time
from typing import Any

TURN_POLL_S = 0.001  # how often a driver waiting for its turn looks again


def wait_turn(turn: Any, index: int, stop: Any) -> bool:
    """Until it is driver `index`'s turn to fill its share of the pool; True when the run was stopped first."""
    while turn.value < index:
        if stop.value:
            return True
        time.sleep(TURN_POLL_S)
    return bool(stop.value)


def wait_all_filled(turn: Any, procs: int, stop: Any) -> bool:
    """Until each of the `procs` drivers has filled its share; True when the run was stopped first."""
    while turn.value < procs and not stop.value:
        time.sleep(TURN_POLL_S)
    return bool(stop.value)
