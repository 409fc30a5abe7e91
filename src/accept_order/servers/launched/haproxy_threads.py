"""How a reply of HAProxy's names its worker: its thread. Apart from haproxy.py (the kind's declaration), so that
`modes` and `inspect`, which import every kind, do not make this dataclass (issue 30)."""

from __future__ import annotations

from dataclasses import dataclass

from ...core.protocol import parse_reply


@dataclass(frozen=True)
class ThreadAttribution:
    """Attribution by the reply `worker THREAD pid PID`: the thread number is the worker's index, and the
    pid must be this HAProxy's (its threads share it)."""

    pid: int
    threads: int
    holds_socket: bool = False

    def from_reply(self, reply: bytes) -> int | None:
        parsed = parse_reply(reply)
        if parsed is None or parsed[0] is None or parsed[1] != self.pid:
            return None
        return parsed[0] if 0 <= parsed[0] < self.threads else None

    def from_socket(self, local: tuple[str, int], peer: tuple[str, int]) -> int | None:
        return None
