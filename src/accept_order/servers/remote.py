"""A server on another host (or in another network namespace), known only by its address: --target.

Nothing about its processes can be seen from here, so a connection is attributed by the reply alone
("worker I pid P" from a built-in `serve`, "worker PID" from the tool's nginx handler); worker indices are
learned from the replies: the index a reply names, or, for a reply that names only a pid, the order in
which pids first answered. Under a closed-loop load (several client processes) only the former is
consistent, so there a reply naming just a pid counts as served without a worker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.errors import PlanError
from ..core.kinds import LongLivedCure, ModeInfo, ServerKind
from ..core.measures import WorkerCounters
from ..core.protocol import HTTP, LINE, ClientProtocol, parse_reply
from ..core.spec import ServerSpec
from ..core.started import Closing

if TYPE_CHECKING:
    from ..core.target import Target

WHY = (
    "a server on another host, known only by its address: the pattern is read from the replies, which "
    "name the worker that served each connection"
)


@dataclass
class LearnedAttribution:
    """Worker indices from the replies; learned pids are kept in `pids` (index order)."""

    workers: int
    pids: list[int] = field(default_factory=list)
    holds_socket: bool = False

    def from_reply(self, reply: bytes) -> int | None:
        parsed = parse_reply(reply)
        if parsed is None:
            return None
        index, pid = parsed
        if index is None:  # "worker PID": the order in which pids first answered
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


class RemoteServer(Closing):
    def __init__(self, spec: ServerSpec) -> None:
        if spec.port == 0:
            raise PlanError("--target needs HOST:PORT")
        self.spec = spec
        self._attribution = LearnedAttribution(spec.workers)

    @property
    def address(self) -> tuple[str, int]:
        return (self.spec.host, self.spec.port)

    @property
    def pids(self) -> list[int]:
        return self._attribution.pids  # grows as workers answer

    @property
    def attribution(self) -> LearnedAttribution:
        return self._attribution

    @property
    def protocol(self) -> ClientProtocol:
        return HTTP if self.spec.protocol == "http" else LINE

    @property
    def unsettled(self) -> int:
        return 0

    def death_fds(self) -> list[int]:
        return []

    def start(self) -> None:
        """Nothing to start: the server runs elsewhere."""

    def settle(self) -> None:
        """Nothing to see: a remote worker's state is not visible from here."""

    def check_alive(self) -> None:
        """A remote server's death shows as failed connections."""

    def stop(self) -> list[WorkerCounters]:
        return [WorkerCounters(i, pid, None, None, None, None, None, None, None, ()) for i, pid in enumerate(self.pids)]

    def check_stopped(self) -> None:
        pass

    def own_evidence(self) -> dict[str, Any]:
        return {}  # nothing of it is visible from here

    def close(self) -> None:
        pass


class RemoteKind(ServerKind):
    name = "remote"
    mode_name = "remote"  # its one mode
    summary = "a server on another host, known only by its address"
    launched = False
    cures = (
        LongLivedCure(
            None,
            "a server on another host, known by its address only: the rows of the kind it is apply (inspect it "
            "on its host)",
            "not measured: only `run --target` drives a server known by its address, and not with a pool",
        ),
    )

    def label(self, spec: ServerSpec) -> str:
        return f"target {spec.host}:{spec.port}"

    def modes(self) -> dict[str, ModeInfo]:
        return {self.mode_name: ModeInfo(self.mode_name, self.summary, WHY, None, "unknown")}

    def check(self, spec: ServerSpec) -> None:
        super().check(spec)
        if spec.port == 0:
            raise PlanError("--target needs HOST:PORT")

    def make(self, spec: ServerSpec, stamps: bool = False) -> Target:
        return RemoteServer(spec)
