"""latency --attach --port's count where bpftrace never ran its END block: the last periodic reading stands, and it
counts every accept (the count by port comes at END only), so the line that says so names the workers' other ports
when they listen on some (HAProxy's other frontends), as their accepts are in it.

bpftrace is a fake on PATH that prints periodic readings and never its END (test_bpftrace_ignores_sigint's); the
workers are this process, listening on two ports."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from test_bpftrace_ignores_sigint import COUNTED, fake_bpftrace, needs_root

from accept_order.probes.accepts import AcceptCounter


@needs_root
def test_a_reading_says_it_counts_the_other_ports(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    me = os.getpid()
    fake_bpftrace(monkeypatch, tmp_path, COUNTED)
    with socket.create_server(("127.0.0.1", 0)) as a, socket.create_server(("127.0.0.1", 0)) as b:
        ours, other = a.getsockname()[1], b.getsockname()[1]
        with AcceptCounter([me], ports=(ours,)) as counter:
            counter.start()
            assert counter.attached, counter.stop().why
            counts = counter.stop()
    assert counts.available and counts.short, counts
    said = "; it counts the accepts on every port the workers listen on, port"
    assert said in counts.short, counts.short
    # pytest itself may listen on more: ours is not among them, the other is
    others = [p.strip() for p in counts.short.rpartition(said)[2].removeprefix("s").removesuffix(" too").split(", ")]
    assert str(other) in others and str(ours) not in others, counts.short
    assert counts.why.endswith(counts.short), counts.why  # what the report prints and the result keeps
