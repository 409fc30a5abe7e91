"""reuseport-cpu's program (the mode is declared in reuseport_cpu.py): `A = cpu; return A`, a classic BPF
program attached to the reuseport group with SO_ATTACH_REUSEPORT_CBPF."""

from __future__ import annotations

import ctypes
import socket

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
