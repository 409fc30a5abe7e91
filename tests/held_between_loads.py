"""The command line (`python -m accept_order`'s), held between its first load and its second: as the second load
reaches its client hosts, it says 'held between loads' on stderr and waits for a line on stdin before it goes on. A
test then does what it must while the hosts idle between loads (the first load's drivers reaped, the next load not
begun), with no race against the coordinator: cut a host's link, SIGKILL the coordinator.

    python tests/held_between_loads.py ramp --clients c1,c2 ... (the command's own arguments)

Not collected by pytest (no test_ prefix); started by the tests as a script."""

from __future__ import annotations

import sys

from accept_order.cli.leave import main_and_leave
from accept_order.loads.hosts import gateways

HELD = "held between loads"
_connect = gateways.Gateways.connect
_loads = [0]


def connect(self: gateways.Gateways, part: str) -> list[gateways.Host]:
    if self.role == "client host":
        _loads[0] += 1
        if _loads[0] == 2:
            print(HELD, file=sys.stderr, flush=True)
            sys.stdin.readline()
    return _connect(self, part)


if __name__ == "__main__":
    gateways.Gateways.connect = connect
    main_and_leave(prog_name="accept-order")
