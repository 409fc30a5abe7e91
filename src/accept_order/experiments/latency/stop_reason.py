"""Why a latency run stopped early, where a signal's interruption is not all of it: an attached worker's exit, and
in a merge, each stopped file's own reason (results/merge_stops.py), where the merged evidence is the first file's
alone and the merged wall time not any file's."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .result import LatencyResult


def stopped_early(result: LatencyResult) -> str | None:
    """'Stopped early ...' with the reason; None for a run a signal interrupted (its time says the rest)."""
    merged = result.evidence.get("merged_from")
    files = merged.get("files") if isinstance(merged, dict) else None
    files = files if isinstance(files, list) else []
    stops = [
        f"{f.get('file')}: {f['stopped']}" for f in files if isinstance(f, dict) and isinstance(f.get("stopped"), str)
    ]
    if stops:
        return f"Stopped early in {len(stops)} of the {len(files)} merged files ({'; '.join(stops)})"
    exited = result.evidence.get("worker_exit")
    if isinstance(exited, dict):  # not a signal: a worker of the attached server exited
        return f"Stopped early: {exited.get('why', 'a worker exited')}"
    return None
