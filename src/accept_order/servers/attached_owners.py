"""Which worker of an attached server took a connection: the one whose fd table holds its socket, or the one its
reply names. Apart from attached.py (the kind's declaration), so that `modes` and `inspect`, which import every
kind, do not make this dataclass (issue 30)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.target import ReplyAttribution

if TYPE_CHECKING:
    from ..probes.owner import SocketOwners


@dataclass
class OwnerAttribution:
    """Attribution by the socket's owner; the reply's "worker PID" when the server names itself."""

    pids: tuple[int, ...]
    holds_socket: bool = True
    _owners: SocketOwners | None = field(default=None, repr=False)
    _reply: ReplyAttribution | None = field(default=None, repr=False)

    def from_reply(self, reply: bytes) -> int | None:
        if self._reply is None:
            self._reply = ReplyAttribution(self.pids)
        return self._reply.from_reply(reply)

    def from_socket(self, local: tuple[str, int], peer: tuple[str, int]) -> int | None:
        if self._owners is None:
            from ..probes.owner import SocketOwners

            self._owners = SocketOwners(self.pids)
        return self._owners.owner(local, peer)

    def close(self) -> None:
        if self._owners is not None:
            self._owners.close()
            self._owners = None
