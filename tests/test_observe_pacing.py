"""observe's load sampling is paced by the CPU a sample uses, not by its wall time (experiments/observe/
load.py): a sample that waits (a busy machine's run queue, here a sleep standing in for it) costs the server
nothing and must not slow the sampling down; one that burns CPU is spaced out to stay within BUDGET of one
CPU. The sampler reads this test's own process: one listener, no server needed."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator, Sequence

import pytest

from accept_order.experiments.observe import load
from accept_order.experiments.observe.load import LoadSampler
from accept_order.experiments.observe.sampling import BUDGET, SAMPLE_EVERY_S
from accept_order.experiments.observe.server import Unit, Watched
from accept_order.probes.tcp_info import TcpSocket

COST_S = 0.05  # what each stand-in sample takes, waiting or burning CPU


@pytest.fixture
def sampler() -> Iterator[LoadSampler]:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        pid = os.getpid()
        watched = Watched(
            target=f"pid {pid}",
            program="python",
            master=None,
            workers=(pid,),
            units=(Unit(pid),),
            ports=(listener.getsockname()[1],),
            listeners=(),
            netns_pid=pid,
        )
        yield LoadSampler(watched)


def test_a_sample_that_waits_is_not_paced_by_its_wait(sampler: LoadSampler, monkeypatch: pytest.MonkeyPatch) -> None:
    real = load.server_sockets

    def waiting(ports: Sequence[int], netns_pid: int) -> list[TcpSocket]:
        time.sleep(COST_S)  # wall time without CPU: what a sample spends waiting for one
        return real(ports, netns_pid)

    monkeypatch.setattr(load, "server_sockets", waiting)
    sampler.sample()
    assert sampler.readable and sampler.cost_s >= COST_S  # it did wait that long
    assert sampler.every_s < COST_S / BUDGET / 2, sampler.every_s  # its own fd table and dump: well under


def test_a_sample_that_burns_cpu_is_spaced_to_the_budget(sampler: LoadSampler, monkeypatch: pytest.MonkeyPatch) -> None:
    real = load.server_sockets

    def burning(ports: Sequence[int], netns_pid: int) -> list[TcpSocket]:
        until = time.thread_time() + COST_S
        while time.thread_time() < until:  # COST_S of this thread's CPU, however long that takes here
            pass
        return real(ports, netns_pid)

    monkeypatch.setattr(load, "server_sockets", burning)
    sampler.sample()  # the first: left out of the pace (it reads everything cold)
    assert sampler.readable and sampler.every_s == SAMPLE_EVERY_S
    sampler.sample()
    assert sampler.every_s >= COST_S / BUDGET > SAMPLE_EVERY_S


def test_one_slow_sample_among_cheap_ones_does_not_set_the_pace(
    sampler: LoadSampler, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A slow first sample (cold) and one slow sample later (preempted in the kernel's dump) must not put the
    next sample seconds off: the pace is the median of the recent ones."""
    real = load.server_sockets
    slow = [True, False, False, False, True]  # the last one slow: the pace must not be its alone

    def sometimes_burning(ports: Sequence[int], netns_pid: int) -> list[TcpSocket]:
        if slow.pop(0):
            until = time.thread_time() + COST_S
            while time.thread_time() < until:
                pass
        return real(ports, netns_pid)

    monkeypatch.setattr(load, "server_sockets", sometimes_burning)
    for _ in range(5):
        sampler.sample()
    assert sampler.every_s < COST_S / BUDGET / 2, sampler.every_s
