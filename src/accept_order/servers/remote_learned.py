"""How `run`'s one client process learns a remote server's workers from its replies (servers/remote.py). Apart
from the kind's declaration, so that `modes` and `inspect`, which import every kind, do not make this
dataclass (issue 30)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.protocol import ROWS_BY_INDEX, ROWS_BY_PID, parse_reply


@dataclass
class LearnedAttribution:
    """Worker indices from the replies; learned pids are kept in `pids` (index order)."""

    workers: int
    pids: list[int] = field(default_factory=list)
    holds_socket: bool = False
    bare: bool = False  # a reply named a pid alone: its row is the order it first answered, not the server's

    @property
    def rows_by(self) -> str | None:
        """How the rows are numbered (core.protocol ROWS_BY_*); None before any reply named a worker."""
        if self.bare:
            return ROWS_BY_PID
        return ROWS_BY_INDEX if any(self.pids) else None

    def from_reply(self, reply: bytes) -> int | None:
        parsed = parse_reply(reply)
        if parsed is None:
            return None
        index, pid = parsed
        if index is None:  # "worker PID": the order in which pids first answered
            self.bare = True
            if pid not in self.pids:
                if len(self.pids) >= self.workers:
                    return None  # more workers answered than the run was told: a bad reply
                self.pids.append(pid)
            return self.pids.index(pid)
        if not 0 <= index < self.workers:
            return None
        while len(self.pids) <= index:
            self.pids.append(0)  # not seen yet
        if self.pids[index] in (0, pid):
            self.pids[index] = pid
            return index
        return None  # the same index answered with another pid: the server restarted a worker

    def from_socket(self, local: tuple[str, int], peer: tuple[str, int]) -> int | None:
        return None
