"""What the reports of a load over kept connections (latency, ramp, burst) say of its counts: how long a pool
took to fill, and the requests each worker says it answered beside those its replies named it for.

A worker's own count can be larger than its replies' where the client gave up on a request that the worker
still answered: a request timed out (a pool's first request waiting in the accept queue behind connections
that blocking workers hold to their end: the worker that accepts it once one of those closes reads it and
answers it, though the client closed it long before), or one under way when the run was stopped. The
client counts those as failed, the worker as answered; no reply names the worker for them. Other gaps (a
worker counting fewer than its replies, or more than the client gave up on) have no such cause here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..core.protocol import ABORTED, TIMEOUT
from ..core.text import plural

# The failures that are the client giving up on a request it had sent, in the words the reports use
GAVE_UP = {TIMEOUT: "timed out", ABORTED: "under way when the run was stopped"}


def filled_in(fill_s: float | None) -> str:
    """' in 3.4 ms', ' in 2.01 s': how long a pool took to fill, for its line ('' where not known: a file from
    before it was timed apart, whose wall time holds the fill)."""
    if fill_s is None:
        return ""
    return f" in {fill_s:.2f} s" if fill_s >= 1 else f" in {1000 * fill_s:.1f} ms"


def beyond_workers(short: bool, timed_out: int) -> str:
    """What became of the connections beyond the workers of a mode that serves each to its end: a pool that
    stopped filling, or a request timed out, says they were never answered; else each was answered once a held
    one ended with the load's last requests ('-m blocking -K 0 -c 8 -w 2 -n 400': 400 of 400, the 6 late)."""
    if short or timed_out:
        return "were never answered" + (f" ({timed_out} timed out)" if timed_out else "")
    return "waited in the accept queue until a held one ended with the load's last requests (all were answered)"


@dataclass(frozen=True)
class OwnCount:
    """Per worker (index order) the requests it says it answered (`own`) and those its replies named it for
    (`replies`), with the client's failed requests by cause (`errors`)."""

    own: tuple[int, ...]
    replies: tuple[int, ...]
    errors: Mapping[str, int]

    @property
    def agrees(self) -> bool:
        return self.own == self.replies

    @property
    def more(self) -> int:
        """How many more requests the workers counted than the replies named (negative: fewer)."""
        return sum(self.own) - sum(self.replies)

    @property
    def gave_up(self) -> dict[str, int]:
        """The requests the client gave up on, by cause (those it counts failed that a worker may have answered)."""
        return {cause: n for cause in GAVE_UP if (n := self.errors.get(cause, 0)) > 0}

    @property
    def explained(self) -> bool:
        """Every worker counted at least its replies, and the surplus is within the requests the client gave up on."""
        return (
            not self.agrees
            and len(self.own) == len(self.replies)
            and all(a >= b for a, b in zip(self.own, self.replies, strict=True))
            and 0 < self.more <= sum(self.gave_up.values())
        )

    def differences(self) -> str:
        """Who counted other than its replies: 'worker 0: 1 more; worker 2: 3 fewer'."""
        return "; ".join(
            f"worker {i}: {abs(a - b)} {'more' if a > b else 'fewer'}"
            for i, (a, b) in enumerate(zip(self.own, self.replies, strict=False))
            if a != b
        )

    def why(self) -> str:
        """Why the counts differ, as far as this run tells: the client's requests it gave up on, or not known."""
        if not self.explained:
            if any(a < b for a, b in zip(self.own, self.replies, strict=False)):
                # a reply the client got that the worker did not count: nothing the client gave up on makes that
                return "a worker counted fewer than the replies naming it, which nothing this run saw explains"
            return "a request whose reply was lost counts on the worker's side only"
        gave_up = self.gave_up
        causes = ", ".join(f"{n} {GAVE_UP[cause]}" for cause, n in gave_up.items())
        total = sum(gave_up.values())
        return (
            f"the {self.more} more are within the {plural(total, 'request')} the client gave up on ({causes}): "
            "a worker still answers such a request once it reads it, and counts it; no reply names it"
        )


def own_count(own: Sequence[int], replies: Sequence[int], errors: Mapping[str, int]) -> OwnCount:
    """The workers' own count beside the replies' and the client's failures."""
    return OwnCount(tuple(own), tuple(replies), dict(errors))


def never_kept(served: int, connections: int, held: int, server_ended: int) -> str | None:
    """The line for a server that does not keep connections open, from what the run saw: no connection carried a
    second request, and every one answered and not still open at the end was ended by the server after its first
    reply (`server_ended`: closed between replies, or told `Connection: close`). None where a connection carried
    two or more (a server closing some, as at its own max-requests, keeps the others) or the server ended none."""
    if not connections or served != connections or not server_ended or server_ended < connections - held:
        return None
    return (
        f"this server does not keep connections open: it ended every connection it answered after its first "
        f"reply ({plural(connections, 'connection')}, none carried a second request), so each request past a "
        "connection's first went over a new one or failed; --requests-per-connection 1 measures it as it serves"
    )
