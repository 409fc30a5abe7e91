"""Review RD of c8710e3 (core/signal_order.py): one_handler_at_a_time writes a struct sigaction back only where
the one it read holds what Python installed. The machine does not name the C library: Android's bionic (Termux's
Python, aarch64 or x86_64) lays struct sigaction out with sa_flags first, where the generic layout read the
handler's address as sa_mask's first word and wrote it back with three more bits set: the next SIGINT would jump
to a scrambled address. Where the layout is right, the handler, SA_ONSTACK and the restorer stay as they were."""

from __future__ import annotations

import ctypes
import signal
import struct
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest

from accept_order.core import libc as libc_module
from accept_order.core import signal_order
from accept_order.core.signal_order import SA_ONSTACK, SIGNALS, one_handler_at_a_time

SA_RESTORER = 0x04000000
HANDLER = 0x7F0012345670  # an address as a handler's would be
RESTORER = 0x7F0000001000
STACK = bytes(range(1, 121))  # glibc's sa_mask past the kernel's 64 signals: what its stack held
GLIBC = "=Q8x120si4xQ"  # the handler; sa_mask (the kernel's 64 bits, then the rest); sa_flags; sa_restorer
BITS = 8 * ctypes.sizeof(ctypes.c_ulong)

pytestmark = pytest.mark.skipif(ctypes.sizeof(ctypes.c_void_p) != 8, reason="the layouts below are LP64's")


class SigAction(ctypes.Structure):
    """glibc's and musl's struct sigaction (bits/sigaction.h)."""

    _fields_ = [
        ("handler", ctypes.c_void_p),
        ("mask", ctypes.c_ulong * (1024 // BITS)),
        ("flags", ctypes.c_int),
        ("restorer", ctypes.c_void_p),
    ]


class FakeLibc:
    """sigaction(2) over a struct laid out by `pack` (what a read returns); every write is kept, as bytes."""

    def __init__(self, layout: str, *fields: int | bytes) -> None:
        self.layout, self.fields = layout, fields
        self.written: list[tuple[int, bytes]] = []

    def sigaction(self, sig: int, act: Any, old: Any) -> int:
        if act is not None:
            self.written.append((sig, bytes(memoryview(act._obj).cast("B"))))
        if old is not None:
            struct.pack_into(self.layout, memoryview(old._obj).cast("B"), 0, *self.fields)
        return 0


class _Aarch64:
    machine = "aarch64"


@pytest.fixture
def on_aarch64(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine the module knows a layout for (Termux's, say), whatever this one is."""
    monkeypatch.setattr(signal_order.os, "uname", _Aarch64)


def _with(monkeypatch: pytest.MonkeyPatch, fake: FakeLibc) -> None:
    monkeypatch.setattr(libc_module, "libc", lambda: fake)


def test_a_struct_laid_out_as_bionic_is_not_written_back(monkeypatch: pytest.MonkeyPatch, on_aarch64: None) -> None:
    # bionic, LP64: int sa_flags; the handler; a 64-bit sa_mask; sa_restorer
    bionic = FakeLibc("=i4xQQQ", SA_ONSTACK | SA_RESTORER, HANDLER, 0, RESTORER)
    _with(monkeypatch, bionic)
    assert one_handler_at_a_time() is False
    assert bionic.written == []


def test_the_generic_layout_gets_the_three_in_its_mask_and_keeps_the_rest(
    monkeypatch: pytest.MonkeyPatch, on_aarch64: None
) -> None:
    glibc = FakeLibc(GLIBC, HANDLER, STACK, SA_ONSTACK | SA_RESTORER, RESTORER)
    _with(monkeypatch, glibc)
    assert one_handler_at_a_time() is True
    assert [sig for sig, _ in glibc.written] == list(SIGNALS)
    for _, written in glibc.written:
        action = SigAction.from_buffer_copy(written)
        assert (action.handler, action.flags, action.restorer) == (HANDLER, SA_ONSTACK | SA_RESTORER, RESTORER)
        assert _signals_in(action) == set(SIGNALS)


def test_a_handler_python_did_not_install_is_left_alone(monkeypatch: pytest.MonkeyPatch, on_aarch64: None) -> None:
    """No SA_ONSTACK: not the handler of Python's signal.signal (a C library's own), whose mask is its own."""
    other = FakeLibc(GLIBC, HANDLER, STACK, SA_RESTORER, RESTORER)
    _with(monkeypatch, other)
    assert one_handler_at_a_time() is False
    assert other.written == []


def _signals_in(action: SigAction) -> set[int]:
    return {sig for sig in range(1, 65) if action.mask[(sig - 1) // BITS] >> ((sig - 1) % BITS) & 1}


def _read(sig: int) -> SigAction:
    action = SigAction()
    assert ctypes.CDLL(None).sigaction(sig, None, ctypes.byref(action)) == 0
    return action


@pytest.fixture
def python_handlers() -> Iterator[None]:
    """Python handlers on the three for the test, then the previous ones (signal.signal: with empty masks)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        pass

    previous = {sig: signal.signal(sig, handler) for sig in SIGNALS}
    try:
        yield
    finally:
        for sig, was in previous.items():
            signal.signal(sig, was)


@pytest.mark.skipif(signal_order.os.uname().machine not in signal_order._KNOWN_LAYOUT, reason="no layout known")
def test_this_machines_libc_keeps_the_handler_and_its_flags(python_handlers: None) -> None:
    before = {sig: _read(sig) for sig in SIGNALS}
    assert all(not _signals_in(action) for action in before.values())  # as Python installs them
    assert one_handler_at_a_time() is True
    for sig in SIGNALS:
        after = _read(sig)
        assert (after.handler, after.flags, after.restorer) == (
            before[sig].handler,
            before[sig].flags,
            before[sig].restorer,
        )
        assert after.flags & SA_ONSTACK
        assert _signals_in(after) == set(SIGNALS)
    assert one_handler_at_a_time() is True  # again (another ArrivalOrder): the mask it made is taken as its own
    signal.signal(signal.SIGTERM, signal.getsignal(signal.SIGTERM))  # Python's own install: an empty mask again
    assert not _signals_in(_read(signal.SIGTERM))
