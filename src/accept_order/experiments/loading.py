"""How far a load got, for the line that ends a run a worker's exit stopped (experiments/session.py's lifecycle):
the drivers' progress while the load runs, its own tallies once it has ended."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core.protocol import ABORTED

if TYPE_CHECKING:
    from ..core.load_summary import LoadSummary
    from ..core.spec import ConcurrentLoad
    from ..loads.generator import LoadGenerator
    from ..loads.hosts.driven import HostsLoad


class Loading:
    """The load running against a target, for the message when a worker dies mid-run: how far it got."""

    def __init__(self) -> None:
        self.generator: LoadGenerator | HostsLoad | None = None
        self.summary: LoadSummary | None = None  # the load's outcome, once it has one
        self.load: ConcurrentLoad | None = None  # what it drives: over kept connections, it counts requests

    def describe(self) -> str:
        """Once the load has ended, its own tallies, with the connections the stop found under way (counted as
        aborted) apart from those that failed, as the report says them; before, the drivers' last progress.
        Requests where connections are kept: the drivers count each request over one (loads/kept.py)."""
        unit = "requests" if self.load is not None and self.load.keeps_connections else "connections"
        if self.summary is not None:
            under_way = self.summary.errors.get(ABORTED, 0)
            done, served = self.summary.driven - under_way, self.summary.ok
            stopped = f"; {under_way} under way at the stop" if under_way else ""
            return f"the run stopped after {done} {unit} ({served} served, {done - served} failed{stopped})"
        done, served = self.generator.finished() if self.generator else (0, 0)
        return f"the run stopped after {done} {unit} ({served} served, {done - served} failed)"
