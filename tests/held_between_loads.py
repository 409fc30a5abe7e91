"""The command line (`python -m accept_order`'s), held before or between its loads: it says 'held between loads' on
stderr and waits for a line on stdin before it goes on, either as its second load reaches its client hosts (the
first load's drivers reaped, the next load not begun), or, with HELD_BEFORE_THE_FIRST=1 in its environment, once its
first load has reached them (each host has taken its part and waits for its load). A test then does what it must
meanwhile with no race against the coordinator: cut a host's link, SIGKILL the coordinator.

    python tests/held_between_loads.py ramp --clients c1,c2 ... (the command's own arguments)

Not collected by pytest (no test_ prefix); started by the tests as a script."""

from __future__ import annotations

import os
import sys

from accept_order.cli.leave import main_and_leave
from accept_order.loads.hosts import gateways

HELD = "held between loads"
BEFORE_THE_FIRST = "HELD_BEFORE_THE_FIRST"
_connect = gateways.Gateways.connect
_loads = [0]


def _held() -> None:
    print(HELD, file=sys.stderr, flush=True)
    sys.stdin.readline()


def connect(self: gateways.Gateways, part: str) -> list[gateways.Host]:
    if self.role != "client host":
        return _connect(self, part)
    _loads[0] += 1
    first = os.environ.get(BEFORE_THE_FIRST) == "1"
    if _loads[0] == 2 and not first:
        _held()
    hosts = _connect(self, part)
    if _loads[0] == 1 and first:
        _held()
    return hosts


if __name__ == "__main__":
    gateways.Gateways.connect = connect
    main_and_leave(prog_name="accept-order")
