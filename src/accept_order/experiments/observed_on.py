"""--observe-on around one load: observe attached on the server's host before the load starts, stopped once
it is over, its per-worker counts joined with the load's (experiments/observe/remote.py). An observation that
fails is said in its place; the load's result is never lost to it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..core.errors import LoadError
from ..core.protocol import ABORTED

if TYPE_CHECKING:  # what observes is imported by a load that asks for --observe-on, not at every run's start-up
    from ..core.load_summary import LoadSummary
    from ..core.spec import ConcurrentLoad
    from ..core.target import Target
    from .observe.remote import RemoteObservation


class Watch:
    """The observation of one load."""

    def __init__(self, observation: RemoteObservation) -> None:
        self.observation = observation

    def joined(self, target: Target, summary: LoadSummary) -> dict[str, Any]:
        """What observe saw, beside the load's counts per worker (`{"host", "error"}` when it failed)."""
        from .observe.remote import joined

        try:
            observed = self.observation.finish()
        except LoadError as exc:
            return {"host": self.observation.destination, "error": str(exc)}
        # over kept connections `served` counts requests: the connections each worker accepted are `connections`
        accepted = summary.connections or summary.served
        seen = joined(self.observation.destination, observed, list(target.pids), accepted)
        if lost := [h.destination for h in summary.hosts if h.lost is not None and h.had_share]:
            # what they drove was accepted there and is in no reply's count here (one not reached drove nothing)
            seen["lost_hosts"] = lost
        if under_way := int(summary.errors.get(ABORTED, 0)):
            seen["under_way"] = under_way  # as those of a stop: accepted, perhaps, and never answered
        return seen


@contextmanager
def observing(target: Target, load: ConcurrentLoad) -> Iterator[Watch | None]:
    """A Watch when the load asks for --observe-on (its probes on before this yields), else None."""
    hosts = load.clients
    if hosts is None or hosts.observe_on is None:
        yield None
        return
    from .observe.remote import RemoteObservation

    with RemoteObservation(hosts, hosts.observe_on, target.address[1]) as observation:
        yield Watch(observation)
