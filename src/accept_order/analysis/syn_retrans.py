"""A latency tail at 1 s, 3 s, 7 s that is the kernel's connection set-up: SYNs (or SYN-ACKs) sent again.

A SYN nobody answers (dropped at a full SYN or accept queue, or answered with an ACK the client resets) is
sent again after the initial retransmission timeout, 1 s (TCP_TIMEOUT_INIT), then after 2 s more, 4 s more:
a connection that needed one retransmission took 1 s or more whatever the accept mode. The kernel counts
them in TcpExtTCPSynRetrans (client SYNs and server SYN-ACKs alike), per network namespace. Said only when
the numbers carry it: durations at or above the 1 s floor and the counter moved during the run; a file
saved before the counter was watched says nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.histogram import LatencyHistogram
from ..core.text import plural

SYN_RETRANS = "TcpExtTCPSynRetrans"
RTO_FLOOR_US = 1_000_000  # the first retransmission of an unanswered SYN comes 1 s after it


@dataclass(frozen=True)
class SynStalls:
    """Durations at or above the retransmission floor, and the SYNs sent again while the run lasted."""

    slow: int  # measurements that took 1 s or more
    total: int  # measurements
    resent: int  # TcpExtTCPSynRetrans's delta over the run
    private: bool  # the counter is the run's own network namespace's (else host-wide)
    # read in an attached server's namespace, not the clients': its SYN-ACKs sent again, not the clients' SYNs
    servers: bool = False


def slow_count(histogram: LatencyHistogram, floor_us: int = RTO_FLOOR_US) -> int:
    """How many durations are at or above `floor_us` (the histogram is exact: no bucket edge rounds it)."""
    return sum(n for us, n in histogram.to_dict().get("counts", []) if us >= floor_us)


def syn_stalls(histogram: LatencyHistogram, evidence: Mapping[str, Any]) -> SynStalls | None:
    """The run's stalls at the floor beside its SYN retransmissions, or None when either is missing: no
    duration of 1 s or more, the counter not moved, or not watched (a file saved before: not in its counters)."""
    counters = evidence.get("counters")
    resent = counters.get(SYN_RETRANS, 0) if isinstance(counters, Mapping) else 0
    slow = slow_count(histogram)
    if not isinstance(resent, int) or resent <= 0 or slow == 0:
        return None
    servers = isinstance(evidence.get("counters_pid"), int)  # probes/evidence.py EvidenceCapture.started
    return SynStalls(slow, histogram.count, resent, not evidence.get("shared_namespace", True), servers)


def syn_stall_sentence(stalls: SynStalls, unit: str = "connection", who: str = "") -> str:
    """One sentence beside the tail: how many took 1 s or more, how many SYNs were sent again and whose count
    that is, and that this part of the tail is the kernel's connection set-up, not the accept mode."""
    where = "in the run's own network namespace" if stalls.private else "host-wide, other TCP traffic included"
    if stalls.servers:
        where = "in the server's network namespace, other TCP traffic there included: its SYN-ACKs, not the clients'"
    # fewer retransmissions than slow ones cannot account for all of them
    which, verb = (
        ("that part of the tail", "is")
        if stalls.resent >= stalls.slow
        else (f"up to {stalls.resent:,} of them", "is" if stalls.resent == 1 else "are")
    )
    if not stalls.private:
        # a host-wide count may be all others' (this machine's other tests sent 32,509 again during one run),
        # and a server that stalls 1 s makes slow connections without a SYN sent again: the counts carry no more
        # than a may, however few they are
        verb = "may be"
        if stalls.resent > stalls.total and not stalls.servers:  # more than the run had: others' among them
            where = f"host-wide, more than the run's {stalls.total:,} {unit}s: other TCP traffic's among them"
    lead = f"{who}: " if who else ""
    slow = plural(stalls.slow, unit, grouped=True)
    resent = f"{stalls.resent:,} " + ("SYN or SYN-ACK" if stalls.resent == 1 else "SYNs or SYN-ACKs")
    return (
        f"{lead}{slow} of {stalls.total:,} took 1 s or more, and {resent} "
        f"{'was' if stalls.resent == 1 else 'were'} sent again during the run ({where}; TCPSynRetrans): an "
        "unanswered SYN is sent again after 1 s, then 2 s more (at 1 s, 3 s, 7 s), so "
        f"{which} {verb} the kernel's connection set-up, not the accept mode"
    )
