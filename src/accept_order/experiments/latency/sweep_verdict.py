"""Which accepts-per-wakeup cap of a sweep did best, and which lost connections.

A cap that lost connections cannot win on latency: its histogram holds only the requests it served (and,
for a SYN the full listen queue dropped, the retransmission's second), so it is ranked after every cap that
served all, and the kernel's counters say why (the accept queue overflowed: ListenOverflows/ListenDrops).
Among the caps that served all, the tails verdict decides (analysis/tails.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...analysis.losses import losses, lost_connections, sweep_name
from ...analysis.tails import tail_verdict
from ...render.evidence import short_counter
from .result import LatencyResult


def why_lost(result: LatencyResult) -> str:
    """'384 of 8000 failed: 384 timeout; ListenOverflows +1834, ListenDrops +1834'."""
    parts = []
    if result.failed:
        kinds = ", ".join(f"{n} {name}" for name, n in sorted(result.errors.items(), key=lambda kv: -kv[1]))
        parts.append(f"{result.failed} of {result.driven} failed: {kinds}")
    elif not result.ok:
        parts.append("served nothing")
    moved = losses(result.evidence)
    if moved:
        parts.append(", ".join(f"{short_counter(name)} {n:+d}" for name, n in moved.items()))
    return "; ".join(parts)


def _counter_note(lost: Sequence[LatencyResult]) -> str:
    """What the counters mean, said once: a full accept queue; host-wide when the namespace was shared."""
    moved = [r for r in lost if losses(r.evidence)]
    notes = []
    overflowed = [r for r in moved if "TcpExtListenOverflows" in losses(r.evidence)]
    if overflowed:
        backlogs = "/".join(sorted({str(r.server.backlog) for r in overflowed}))
        notes.append(f"ListenOverflows: a handshake completed while the accept queue (backlog {backlogs}) was full")
    if any(r.evidence.get("shared_namespace", True) for r in moved):
        notes.append("these counters are host-wide (shared network namespace) and may include other traffic")
    return ". " + "; ".join(notes) if notes else ""


@dataclass(frozen=True)
class SweepVerdict:
    """The caps in rank order (those that served all first), the ones that lost connections, and the text."""

    ranking: tuple[str, ...]
    lost: tuple[str, ...]
    text: str


def sweep_verdict(results: Sequence[LatencyResult]) -> SweepVerdict:
    names = [sweep_name(r) for r in results]
    whole = [(n, r) for n, r in zip(names, results, strict=True) if not lost_connections(r)]
    lost = [(n, r) for n, r in zip(names, results, strict=True) if lost_connections(r)]
    whole.sort(key=lambda nr: (nr[1].histogram.percentile(99), nr[1].histogram.stdev_us))
    # Fewest lost first: failures, then the kernel's drops.
    lost.sort(key=lambda nr: (nr[1].failed + (0 if nr[1].ok else 1 << 62), sum(losses(nr[1].evidence).values())))
    if len(whole) >= 2:
        tails = tail_verdict([r for _, r in whole], [n for n, _ in whole])
        if tails.tightest is not None:  # the tightest first, the others as they were (by p99)
            whole.sort(key=lambda nr: nr[0] != tails.tightest)
        head = tails.text if not lost else f"of the caps that served every connection, {tails.text}"
    elif len(results) == 1:
        head = f"one cap only ({names[0]}): nothing to compare it with"
    elif len(whole) == 1:
        h = whole[0][1].histogram
        head = f"{whole[0][0]} is the only cap that served every connection (p99 {h.percentile(99) / 1000:.2f} ms)"
    else:
        head = "every cap lost connections: no cap wins on latency (each histogram holds only what it served)"
    text = head
    if lost and len(results) == 1:
        text += f"; it lost connections ({why_lost(lost[0][1])})" + _counter_note([lost[0][1]])
    elif lost:
        if whole:
            them = "it" if len(whole) == 1 else "them"
            they, their = ("they", "their") if len(lost) > 1 else ("it", "its")
            text += (
                f". Ranked after {them}, as {they} lost connections ({their} latencies cover only what {they} served): "
            )
        else:
            text += ": "
        text += ", ".join(f"{n} ({why_lost(r)})" for n, r in lost) + _counter_note([r for _, r in lost])
    return SweepVerdict(tuple(n for n, _ in whole + lost), tuple(n for n, _ in lost), text)
