"""HAProxy launched without --accept-batch runs with HAProxy's own tune.maxaccept, 4 since 2.4 (its defaults.h
MAX_ACCEPT; Debian 2.6's configuration.txt: 'This value defaults to 4'), not 64: the tool wrote 'tune.maxaccept 64',
called HAProxy's own default, so every run said to be HAProxy as it comes took up to 64 connections a wakeup (bpftrace,
'latency --server haproxy -w 2 -n 4000 -c 64': at most 64 per thread's wakeup; HAProxy started by hand from a config
without the line: at most 4; with --accept-batch 4: at most 4).

The witness is the kernel: bpftrace's count of accepts between a thread's waits, HAProxy's process stopped while the
connections queue, then let go; once as the tool launches it, once as a user would, by hand, without the line."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from pathlib import Path

import pytest
from accepts_per_wakeup import BPFTRACE, answers, counted_after_queueing, program, runs_of
from conftest import wait_for

from accept_order.core.spec import ServerSpec
from accept_order.servers.launched.haproxy import HAPROXY_MODES, HaproxyServer, haproxy_binary, render_config
from accept_order.servers.launched.haproxy import haproxy_missing as missing
from accept_order.servers.registry import checked, server_kind

AS_IT_COMES = server_kind("haproxy").default_accept_batch  # what the command line gives it without --accept-batch
QUEUED = 40  # more than HAProxy's own batch, fewer than 64: a wakeup takes 4 of them, or all 40 with the old default
BY_HAND = """global
    nbthread 2
defaults
    mode http
    timeout client 10s
    timeout server 10s
    timeout connect 5s
frontend f
    bind 127.0.0.1:{port} backlog 511
    http-request return status 200 content-type text/plain string ok hdr Connection close
"""
NEEDS = pytest.mark.skipif(
    missing() is not None or os.geteuid() != 0 or BPFTRACE is None, reason="needs haproxy, root and bpftrace"
)


def test_the_default_cap_is_haproxys_own() -> None:
    spec = checked(ServerSpec(kind="haproxy", mode="threads", workers=2, accept_batch=AS_IT_COMES))
    assert AS_IT_COMES == 4
    assert "tune.maxaccept 4\n" in render_config(spec, HAPROXY_MODES["threads"], 80, "/x")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _counted(pid: int, port: int) -> dict[int, int]:
    # every thread seen stopped before the connections queue (the helper's wait: a run counted 3 of 40 before)
    out = counted_after_queueing([pid], ("127.0.0.1", port), QUEUED, program([pid]), b"HTTP/1.", timeout_s=30)
    runs = runs_of(out)
    # the queued ones, and at most one more: a start-up check of the tool's may still be in the queue
    assert QUEUED <= sum(k * v for k, v in runs.items()) <= QUEUED + 1, out
    return runs


@NEEDS
def test_launched_as_it_comes_it_accepts_as_haproxy_by_hand_does(tmp_path: Path) -> None:
    port = _free_port()
    config = tmp_path / "haproxy.cfg"
    config.write_text(BY_HAND.format(port=port))
    argv = [haproxy_binary(), "-db", "-f", str(config)]
    hand = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(lambda: answers(port, b"HTTP/1."), bool, 30.0, "HAProxy started by hand")  # its threads poll
        by_hand = _counted(hand.pid, port)
    finally:
        os.killpg(hand.pid, signal.SIGTERM)
        hand.wait(timeout=30)
    with HaproxyServer(
        checked(ServerSpec(kind="haproxy", mode="threads", workers=2, accept_batch=AS_IT_COMES))
    ) as server:
        assert server.master is not None
        launched = _counted(server.master.pid, server.address[1])
    assert max(by_hand) == 4, by_hand  # HAProxy's own: a wakeup takes 4 of the 40 queued
    assert max(launched) == max(by_hand), (launched, by_hand)
