"""The latency report's sentence beside the tail when part of it is SYNs sent again (analysis/syn_retrans.py)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from ...analysis.syn_retrans import syn_stall_sentence, syn_stalls
from .kept_load_words import finished_unit
from .result import LatencyResult


def syn_stall_notes(results: Sequence[LatencyResult], named: bool = False) -> list[Text]:
    """One line per run whose durations reach the 1 s retransmission floor while TCPSynRetrans moved; none
    for the others, and none for files saved before the counter was watched. `named`: each line names its run."""
    notes = []
    for r in results:
        stalls = syn_stalls(r.histogram, r.evidence)
        if stalls is not None:
            who = r.server.label if named else ""
            notes.append(Text(syn_stall_sentence(stalls, finished_unit(r.load), who) + ".", style="yellow"))
    return notes
