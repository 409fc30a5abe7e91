"""The line a report of several runs ends with when Ctrl-C stopped it: which row is partial, and that the
variants after it never ran (their rows are missing, not empty)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text


def stopped_early(cut: Sequence[str]) -> Text:
    """`cut`: the labels of the runs marked interrupted (the last is the one the signal cut short)."""
    what = f"the {cut[-1]} row is the connections until then" if cut else "the rows are the runs that finished"
    return Text(f"Stopped early: interrupted; {what}, and no later variant ran.", style="bold yellow")
