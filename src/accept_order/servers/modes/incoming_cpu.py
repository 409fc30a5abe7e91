"""`incoming-cpu`: reuseport listeners, listener i marked with SO_INCOMING_CPU = i.

The kernel prefers, within the reuseport group, the listener whose incoming CPU matches the CPU the
connection arrived on (kernel selftest `so_incoming_cpu.c`); over loopback that is the client's CPU. A
connection from a CPU no listener is marked with falls back to the hash.
"""

from __future__ import annotations

import socket

from ...core.models import Model
from .reuseport import SteeredReuseportMode

SO_INCOMING_CPU = getattr(socket, "SO_INCOMING_CPU", 49)  # asm-generic/socket.h


class IncomingCpuMode(SteeredReuseportMode):
    name = "incoming-cpu"
    summary = "SO_REUSEPORT listeners, listener i marked SO_INCOMING_CPU = i"
    why = (
        "each reuseport listener is marked with SO_INCOMING_CPU, and the kernel prefers the listener whose mark "
        "matches the CPU the connection arrived on: over loopback, the client's CPU decides, whether or not "
        "that worker is busy"
    )
    model = Model.CLIENT_CPU  # the listener of the CPU the client connected from (records keep the client's CPU)
    needs = "SO_INCOMING_CPU"

    def steer(self, index: int, sock: socket.socket) -> None:
        sock.setsockopt(socket.SOL_SOCKET, SO_INCOMING_CPU, index)
