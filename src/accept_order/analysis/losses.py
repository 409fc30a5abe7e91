"""Whether a latency run lost connections: failed ones, none served, or the kernel's counters of attempts it
dropped before any worker could accept them. A run that lost connections cannot win on latency: its
histogram holds only what it served (experiments/latency/sweep_verdict.py, analysis/stability.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Counters that mean the kernel dropped a connection attempt before any worker could accept it.
LOSS_COUNTERS = ("TcpExtListenOverflows", "TcpExtListenDrops", "TcpExtTCPReqQFullDrop")


def sweep_name(result: Any) -> str:
    """The row's name in seed 001's table: '4 limit', 'no limit'."""
    batch = result.server.accept_batch
    return f"{batch} limit" if batch else "no limit"


def losses(evidence: Mapping[str, Any]) -> dict[str, int]:
    """The loss counters that moved during the run (deltas from its evidence)."""
    counters = evidence.get("counters", {})
    if not isinstance(counters, Mapping):
        return {}
    return {name: n for name in LOSS_COUNTERS if isinstance(n := counters.get(name), int) and n > 0}


def lost_connections(result: Any) -> bool:
    return result.failed > 0 or not result.ok or bool(losses(result.evidence))
