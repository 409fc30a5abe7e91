"""Whether a latency run lost connections: failed ones, none served, or the kernel's counters of attempts its
own network namespace dropped before any worker could accept them. A run that lost connections cannot win
on latency: its histogram holds only what it served (experiments/latency/sweep_verdict.py,
analysis/stability.py).

The kernel's counters are per network namespace. A run in a namespace of its own (the evidence says
`shared_namespace: False`) owns them; in a shared one they are host-wide, moved by any traffic on the host
(a listener elsewhere that never accepts overflows them too), so they are said as host-wide and never
counted as the run's loss: the run's own losses then are the connections it failed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# Counters that mean the kernel dropped a connection attempt before any worker could accept it.
LOSS_COUNTERS = ("TcpExtListenOverflows", "TcpExtListenDrops", "TcpExtTCPReqQFullDrop")


def sweep_name(result: Any) -> str:
    """The row's name in seed 001's table: '4 limit', 'no limit'."""
    batch = result.server.accept_batch
    return f"{batch} limit" if batch else "no limit"


def losses(evidence: Mapping[str, Any]) -> dict[str, int]:
    """The loss counters that moved during the run (deltas from its evidence), whoever's they are."""
    counters = evidence.get("counters", {})
    if not isinstance(counters, Mapping):
        return {}
    return {name: n for name in LOSS_COUNTERS if isinstance(n := counters.get(name), int) and n > 0}


def host_wide(evidence: Mapping[str, Any]) -> bool:
    """Whether the run's counters are host-wide: its network namespace was not its own (evidence without
    the flag is read as shared, as render/evidence.py reads it)."""
    return evidence.get("shared_namespace", True) is not False


def own_losses(evidence: Mapping[str, Any]) -> dict[str, int]:
    """The loss counters that moved in the run's own network namespace; none when the namespace was shared."""
    return {} if host_wide(evidence) else losses(evidence)


def host_wide_losses(evidence: Mapping[str, Any]) -> dict[str, int]:
    """The loss counters that moved in a shared namespace: the host's, not (only) the run's."""
    return losses(evidence) if host_wide(evidence) else {}


def lost_connections(result: Any) -> bool:
    """Its failed connections, none served, or its own namespace's loss counters; never host-wide ones."""
    return result.failed > 0 or not result.ok or bool(own_losses(result.evidence))


def host_wide_note(evidences: Sequence[Mapping[str, Any]], during: str) -> str | None:
    """'host-wide ListenOverflows +544 to +560 during every run: not counted as a loss (...)', or None when
    no host-wide loss counter moved. `during` says in which runs ('every run', '3 of 4 runs')."""
    moved = [m for e in evidences if (m := host_wide_losses(e))]
    if not moved:
        return None
    spans = []
    for name in LOSS_COUNTERS:
        values = [m[name] for m in moved if name in m]
        if values:
            low, high = min(values), max(values)
            spans.append(f"{name.removeprefix('TcpExt')} +{low}" + (f" to +{high}" if high != low else ""))
    return f"host-wide {', '.join(spans)} during {during}: not counted as a loss (other traffic moves them too)"
