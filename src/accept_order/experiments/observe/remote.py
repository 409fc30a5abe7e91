"""--observe-on DEST: observe on the server's host for a load's window, over the engine that reaches the
client hosts (loads/hosts/), and its per-worker counts set beside the load's.

The observation starts before the load (the load waits until its probes are on) and stops once the load is
over; its result comes back whole (pickled between two copies of the same accept-order) and is kept, in
plain data, with the load's: per worker its accepts, CPU and the load it carried, and how its accepts
compare with the connections the replies attributed to it.
"""

from __future__ import annotations

import pickle
from collections.abc import Sequence
from typing import Any

from ...core.errors import LoadError
from ...core.hosts import ClientHosts
from ...core.started import Started
from ...core.text import escape_controls
from ...loads.hosts.gateways import Gateways, Host
from .result import ObserveResult

ATTACH_TIMEOUT_S = 60.0  # bpftrace's start on a cold host takes seconds
FINISH_TIMEOUT_S = 30.0
PART = __package__ + ".remote_side"  # what the host serves (named, not imported: it imports the session)
LONGEST_S = 24 * 3600.0  # the observation ends with the load; this only bounds one that was never stopped


class RemoteObservation(Started):
    """observe on `destination` watching `port`. `start()` returns once its probes are on; `finish()` stops it
    and returns its result."""

    def __init__(self, hosts: ClientHosts, destination: str, port: int) -> None:
        self.destination = destination
        self.port = port
        self.gateways = Gateways(hosts.only(destination), role="--observe-on")
        self.host: Host | None = None

    def start(self) -> None:
        self.host = self.gateways.connect(PART)[0]
        self.host.send(("observe", self.port, LONGEST_S), "as it was asked to observe")
        reply = self.host.receive(ATTACH_TIMEOUT_S, "for it to attach to the server")
        if reply[0] != "watching":
            # its probes' words are said where they ran: "this network namespace" would read as the coordinator's
            said = escape_controls(str(reply[1])).replace(" in this network namespace", " there")
            where = "; --observe-on names the server's host" if said.startswith("nobody listens") else ""
            if said.endswith(": give the pid"):  # observe's way out, which --observe-on has not: it knows the port
                said = said.removesuffix(": give the pid")
                where = "; --observe-on finds the server by its port alone: run 'accept-order observe PID' on that host"
            raise LoadError(f"{self.host.name}: {said}{where}")

    def finish(self) -> ObserveResult:
        assert self.host is not None
        self.host.send(("stop",), "before the load's end")
        reply = self.host.receive(FINISH_TIMEOUT_S, "for what it observed")
        if reply[0] != "result":
            raise LoadError(f"{self.host.name}: {escape_controls(str(reply[1]))}")
        result: ObserveResult = pickle.loads(reply[1])
        return result

    def close(self) -> None:
        self.gateways.close()


def joined(destination: str, observed: ObserveResult, pids: Sequence[int], served: Sequence[int]) -> dict[str, Any]:
    """The observation as plain data, each worker's accepts beside the connections the replies gave it
    (`pids`, `served`: the load's workers in index order). `agrees`: every worker's count is the same both
    ways (None: observe could not count accepts exactly, untraced)."""
    # pid 0: an index no reply named (-w said more workers than answered a server elsewhere): nothing to compare
    by_pid = {pid: served[i] for i, pid in enumerate(pids) if pid and i < len(served)}
    workers = []
    for w in observed.workers:
        key = w.tid if w.tid is not None else w.pid
        workers.append(
            {
                "pid": w.pid,
                "tid": w.tid,
                "accepts": w.accepts,
                "served_by_replies": by_pid.get(key),
                "cpu_s": w.cpu_s,
                "connections_observed": w.connections_observed,
                "bytes_in": w.bytes_in,
                "bytes_out": w.bytes_out,
            }
        )
    seen = {w["tid"] if w["tid"] is not None else w["pid"] for w in workers}
    exact = observed.traced and all(w["accepts"] is not None for w in workers)
    agrees = (
        all(w["accepts"] == (w["served_by_replies"] or 0) for w in workers) and set(by_pid) <= seen if exact else None
    )
    return {
        "host": destination,
        "program": observed.program,
        "traced": observed.traced,
        "source": observed.source,
        "wall_s": observed.wall_s,
        "mechanism": observed.mechanism.name if observed.mechanism is not None else None,
        "workers": workers,
        "agrees": agrees,
        "notes": list(observed.notes),
        "counters": dict(observed.counters),  # the server's namespace's: the load's own host may be another
    }
