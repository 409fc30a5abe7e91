"""Progress says how many were served and how many failed, not only how many finished: 'latency --target
127.0.0.1:8080 -n 20000 -c 50' at nginx without --protocol http waited out every connection's timeout while its
progress said '2,950 of 20,000 connections' as if all was well. The server here is a listener that accepts
nothing: the kernel completes each handshake into its queue and the client waits its --timeout for a line, as it
waits on nginx; the kernel guarantees no byte ever comes, so every connection that finishes has failed."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from typing import Any, cast

import psutil
import pytest
from conftest import run_cli
from test_clients_kept import spawned  # noqa: F401 - the fixture
from test_progress_terminal import _read_until

from accept_order.cli import latency, run
from accept_order.cli.progress import RunProgress
from accept_order.core.finished import Finished, outcome_text

ESCAPES = rb"(?:\x1b\[[0-9;?]*[A-Za-z]|\s)*"  # rich's colours around the count
LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs epoll, procfs and a pty")


def _quick_beats(monkeypatch: pytest.MonkeyPatch, module: Any) -> list[str]:
    beats: list[str] = []

    class Quick(RunProgress):  # every beat the heartbeat thread's loop reaches, collected (run_cli's is no terminal)
        def __init__(self, total: int, **kwargs: Any) -> None:
            super().__init__(total, write=beats.append, every=0.2, **kwargs)

    monkeypatch.setattr(module, "RunProgress", Quick)
    return beats


def test_the_split_is_said_with_its_cause() -> None:
    assert outcome_text(Finished(2950, 0, 2950)) == "0 served, 2,950 failed (timeout)"
    assert outcome_text(Finished(3000, 1000, 1500)) == "1,000 served, 2,000 failed (1,500 timed out)"
    assert outcome_text(Finished(10, 10, 0)) == "10 served, 0 failed"
    assert outcome_text(Finished(10, 8, 5)) == "8 served, 2 failed (timeout)"  # a lagging count: never over failed
    assert outcome_text(7) == ""  # a bare count (a tick with no split) says nothing it does not know
    assert Finished(5, 2) + 1 == 6 and f"{Finished(2950, 0):,}" == "2,950"  # still the count every tick took


@LINUX_ONLY
@pytest.mark.parametrize("driver", ["auto", "epoll"])  # io_uring's chains where they run, and the epoll loop
def test_latency_off_a_terminal_beats_its_failures(
    monkeypatch: pytest.MonkeyPatch, silent_port: int, driver: str
) -> None:
    beats = _quick_beats(monkeypatch, latency)
    args = ["latency", "--target", f"127.0.0.1:{silent_port}", "-n", "4", "-c", "1", "--timeout", "1s"]
    args += ["--driver", driver]
    result = run_cli(args)
    assert result.exit_code == 1, result.output  # served nothing: its error line
    # the old line was '2 of 4 connections, 3 s elapsed': finished, as if served
    failing = [
        b
        for b in beats
        if re.fullmatch(
            r"accept-order: [1-4] of 4 connections: 0 served, [1-4] failed "
            r"\(timeout\), [\d.]+ s elapsed",
            b,
        )
    ]
    assert failing, beats
    assert not any(re.search(r"[1-9] served", b) for b in beats), beats


@LINUX_ONLY
def test_run_off_a_terminal_beats_its_failures(monkeypatch: pytest.MonkeyPatch, silent_port: int) -> None:
    beats = _quick_beats(monkeypatch, run)
    result = run_cli(["run", "--target", f"127.0.0.1:{silent_port}", "-n", "3", "--timeout", "1s"])
    assert result.exit_code == 1, result.output  # a silent port served nothing: the report, then why
    assert any(
        re.fullmatch(
            r"accept-order: [1-3] of 3 connections: 0 served, [1-3] failed \(timeout\), [\d.]+ s "
            r"elapsed",
            b,
        )
        for b in beats
    ), beats


@LINUX_ONLY
def test_latency_on_a_terminal_shows_its_failures_in_the_bar(silent_port: int) -> None:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "NO_COLOR", "TERM")}
    argv = [sys.executable, "-m", "accept_order", "latency", "--target", f"127.0.0.1:{silent_port}"]
    argv += ["-n", "3", "-c", "1", "--timeout", "1s"]
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env={**env, "TERM": "xterm-256color"})
    os.close(slave)
    seen = bytearray()
    try:
        # the bar, redrawn after the first connection timed out: its count, then how they ended
        found = _read_until(master, seen, 120, rb"[1-3]/3" + ESCAPES + rb"0 served, [1-3] failed \(timeout\)")
        _read_until(master, seen, 120)  # the rest, until the terminal closes
        assert proc.wait(30) == 1, bytes(seen)[-800:]
    finally:
        if proc.poll() is None:
            for child in psutil.Process(proc.pid).children(recursive=True):
                child.kill()
            proc.kill()
            proc.wait()
        os.close(master)
    assert found, bytes(seen)[-1500:]


def test_client_hosts_ticks_carry_the_split() -> None:
    # over --clients the ticks come from the hosts ('tick', finished, served, timed out): the coordinator's tick
    # passes on what they said, summed (a host that says no timed-out count, as before, counts none)
    from accept_order.loads.hosts.driven import HostsLoad, _Progress

    hosts = object.__new__(HostsLoad)  # no host reached: only what their messages say is under test
    hosts.progress = [_Progress(host=cast(Any, None), load=cast(Any, None)) for _ in range(3)]
    hosts._heard(hosts.progress[0], ("tick", 5, 1, 4))
    hosts._heard(hosts.progress[1], ("tick", 3, 0, 3))
    hosts._heard(hosts.progress[2], ("tick", 2, 2))
    tally = hosts.tally()
    assert (int(tally), tally.served, tally.timed_out) == (10, 3, 7)
    assert outcome_text(tally) == "3 served, 7 failed (timeout)"


@LINUX_ONLY
def test_run_repeated_beats_the_run_under_way(monkeypatch: pytest.MonkeyPatch) -> None:
    # 'run --repeat' beat 'run 2 of 2, 3 s elapsed' alone: its connections' count and how they ended come too
    beats = _quick_beats(monkeypatch, run)
    result = run_cli(["run", "-w", "2", "-n", "20", "--gap", "100ms", "--repeat", "2"])
    assert result.exit_code == 0, result.output
    said = r"accept-order: run [12] of 2: [1-9]\d* of 20 connections: [1-9]\d* served, 0 failed, [\d.]+ s elapsed.*"
    assert any(re.fullmatch(said, b) for b in beats), beats


def test_client_hosts_relay_the_split_to_the_coordinators_tick(spawned: dict[str, Any]) -> None:  # noqa: F811
    # execnet "popen" gateways stand in for ssh (tests/test_clients_kept.py's fixture): each host's load_side sends
    # its generator's split in its ticks, and the coordinator's tick passes it on
    from accept_order.core.hosts import ClientHosts
    from accept_order.core.spec import ConcurrentLoad, ServerSpec
    from accept_order.experiments.lifecycle import lifecycle
    from accept_order.experiments.session import drive_load

    load = ConcurrentLoad(connections=None, duration_s=1.0, concurrency=2, driver_procs=1, clients=ClientHosts(("c1",)))
    ticks: list[int] = []
    lifecycle(
        ServerSpec(workers=2),
        lambda target: drive_load(target, load, 2, lambda done, _elapsed: ticks.append(done)),
        lambda: "",
        lambda outcome, measured: outcome,
    )
    served = [t for t in ticks if isinstance(t, Finished) and t.served]
    assert served, ticks[-5:]  # a plain count (the old tick) has no split to say
    assert all(t.served <= t for t in served) and not any(t.timed_out for t in served)
