"""`reuseport-cpu`: reuseport listeners steered by CPU with a classic BPF program (SO_ATTACH_REUSEPORT_CBPF).

The program returns the number of the CPU the connection arrived on, and the kernel uses it as the index of
the listener in the reuseport group, as in the kernel's `reuseport_bpf_cpu` selftest and Cloudflare's
`setcbpf`. Over loopback a connection arrives on the client's CPU, so a client pinned to CPU i reaches
worker i every time. A CPU number at or above the number of listeners falls back to the hash.
"""

from __future__ import annotations

import ctypes
import socket

from ...core.models import Model
from .reuseport import SteeredReuseportMode

SO_ATTACH_REUSEPORT_CBPF = 51  # asm-generic/socket.h
BPF_LD, BPF_W, BPF_ABS, BPF_RET, BPF_A = 0x00, 0x00, 0x20, 0x06, 0x10
SKF_AD_OFF, SKF_AD_CPU = -0x1000, 36  # the ancillary load of "the current CPU"


class _Insn(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_Insn))]


def attach_cpu_program(sock: socket.socket) -> None:
    """`A = cpu; return A` on the reuseport group of `sock` (the kernel copies the program at once)."""
    insns = (_Insn * 2)(
        _Insn(BPF_LD | BPF_W | BPF_ABS, 0, 0, (SKF_AD_OFF + SKF_AD_CPU) & 0xFFFFFFFF),
        _Insn(BPF_RET | BPF_A, 0, 0, 0),
    )
    prog = _Prog(len(insns), ctypes.cast(insns, ctypes.POINTER(_Insn)))
    sock.setsockopt(
        socket.SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, ctypes.string_at(ctypes.addressof(prog), ctypes.sizeof(prog))
    )


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
            attach_cpu_program(sock)
