"""`reuseport-cpu`: reuseport listeners steered by CPU with a classic BPF program (SO_ATTACH_REUSEPORT_CBPF).

The program returns the number of the CPU the connection arrived on, and the kernel uses it as the index of
the listener in the reuseport group, as in the kernel's `reuseport_bpf_cpu` selftest and Cloudflare's
`setcbpf`. Over loopback a connection arrives on the client's CPU, so a client pinned to CPU i reaches
worker i every time. A CPU number at or above the number of listeners falls back to the hash.
"""

from __future__ import annotations

import socket

from ...core.models import Model
from .reuseport import SteeredReuseportMode

# The program (ctypes structures, reuseport_cpu_program.py) is made where a pool of this mode opens:
# `modes` and `compare` import every mode to list them (issue 30).


class ReuseportCpuMode(SteeredReuseportMode):
    name = "reuseport-cpu"
    summary = "SO_REUSEPORT listeners steered by a classic BPF program: the listener of the arriving CPU"
    why = (
        "a classic BPF program on the reuseport group (SO_ATTACH_REUSEPORT_CBPF) returns the CPU the "
        "connection arrived on, and the kernel gives it to that listener: over loopback, the client's CPU "
        "decides, whether or not that worker is busy"
    )
    model = Model.CLIENT_CPU  # the listener of the CPU the client connected from (records keep the client's CPU)
    needs = "SO_ATTACH_REUSEPORT_CBPF"

    def steer(self, index: int, sock: socket.socket) -> None:
        if index == 0:  # the program belongs to the group: attaching it to its first socket is enough
            from .reuseport_cpu_program import attach_cpu_program

            attach_cpu_program(sock)
