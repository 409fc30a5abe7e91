"""What the per-worker table of a server attached by pid rests on, when its replies name no worker: the kernel's
accept counts (experiments/session.py), and the accepts that table leaves out (workers started during the run)."""

from __future__ import annotations

from rich.text import Text

from .kept_report import finished_unit
from .result import LatencyResult


def kernel_counts_text(result: LatencyResult) -> Text | None:
    """Where the per-worker counts of a server that does not name its workers came from."""
    kernel = result.evidence.get("accept_counts")
    if not isinstance(kernel, dict):
        return None
    if kernel.get("available"):
        kept = (
            ": the connections each accepted, not the requests over them (the replies do not name a worker)"
            if result.load.keeps_connections
            else ""
        )
        return Text(f"served per worker: accepts counted by the kernel ({kernel.get('why', '?')}){kept}", style="dim")
    return Text(
        f"served per worker: not known: the replies do not name a worker and the kernel's accept counts are not "
        f"available here ({kernel.get('why', '?')}); the latencies above are complete",
        style="yellow",
    )


def unplaced_text(result: LatencyResult) -> Text | None:
    """The accepts the per-worker table of an attached server leaves out: those of workers its master started
    during the run (a reload), named where the kernel's count followed the master's children, else how many
    served connections no attached worker accepted (one request each: each served connection was accepted once)."""
    kernel = result.evidence.get("accept_counts")
    if not isinstance(kernel, dict) or not kernel.get("available"):
        return None
    placed, unit = sum(result.served), finished_unit(result.load)
    appeared = {str(pid): int(n) for pid, n in (kernel.get("appeared") or {}).items() if n}
    if appeared:
        each = ", ".join(f"pid {pid} {n:,}" for pid, n in appeared.items())
        return Text(
            f"workers that appeared during the run (children of pid {kernel.get('followed', '?')} that were not "
            f"attached, as a reload starts) accepted {sum(appeared.values()):,} connections the table leaves out "
            f"({each}); the table's {placed:,} are the attached workers' alone",
            style="yellow",
        )
    missing = result.ok - placed
    if result.load.keeps_connections or missing <= 0:  # kept: requests and accepts are not the same count
        return None
    return Text(
        f"the table places {placed:,} of the {result.ok:,} {unit}s served: the other {missing:,} were accepted by "
        "processes that were not attached (workers started during the run, as a reload does, are not traced: "
        + (
            "attach their master's pid"
            if "followed" not in kernel and len(result.server.attach) > 1
            else "this kernel lets no trace follow a master's children"
        )
        + ")",
        style="yellow",
    )


def served_known(result: LatencyResult) -> tuple[int, ...] | None:
    """The served count per worker, or None where nobody could count it (the file holds zeros then)."""
    kernel = result.evidence.get("accept_counts")
    return None if isinstance(kernel, dict) and not kernel.get("available") else result.served
