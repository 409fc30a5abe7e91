"""The multi-host loads' pools (core/blocked_pool.py): their threads leave SIGINT, SIGTERM and SIGHUP to the main
thread (core/signal_order.py says why), and the ssh they start takes the three again: a process inherits the mask
of the thread that forks it, and ssh started with SIGTERM blocked would outlive cancel()'s SIGTERM."""

from __future__ import annotations

import signal
import subprocess
import threading

from conftest import wait_for

from accept_order.core.blocked_pool import BlockedPool
from accept_order.core.signal_order import SIGNALS
from accept_order.loads.hosts.gateways import SSH_FAILED, Ssh

TIMEOUT_S = 30.0


def _mask(status: str, field: str) -> set[int]:
    """The signals of a /proc/PID/status line ("SigBlk:", "SigIgn:")."""
    bits = next(int(line.split()[1], 16) for line in status.splitlines() if line.startswith(field))
    return {sig for sig in range(1, 65) if bits & (1 << (sig - 1))}


def _own_status() -> str:
    with open(f"/proc/self/task/{threading.get_native_id()}/status") as status:
        return status.read()


def test_the_pools_threads_block_the_three() -> None:
    with BlockedPool(max_workers=3) as pool:
        gate = threading.Barrier(3, timeout=TIMEOUT_S)  # three tasks at once: three threads, not one reused

        def blocked() -> set[int]:
            gate.wait()
            return _mask(_own_status(), "SigBlk:")

        masks = [future.result(TIMEOUT_S) for future in [pool.submit(blocked) for _ in range(3)]]
        masks += list(pool.map(lambda _: _mask(_own_status(), "SigBlk:"), range(3)))
    assert all(set(SIGNALS) <= mask for mask in masks), masks
    assert not set(SIGNALS) & _mask(_own_status(), "SigBlk:")  # the submitting thread's mask is as it was


def _started_from_the_pool(ssh: Ssh, argv: list[str]) -> subprocess.Popen[bytes]:
    with BlockedPool(max_workers=1) as pool:
        return pool.submit(ssh.Popen, argv, stdout=subprocess.PIPE).result(TIMEOUT_S)


def test_ssh_started_from_the_pool_takes_the_signals() -> None:
    """What ssh's process starts with, read by the command itself: none of the three blocked, SIGPIPE and SIGINT
    not ignored (as subprocess starts a command), the same process as Popen's (exec'd in place). Not through sh:
    dash empties its mask as it starts."""
    process = _started_from_the_pool(Ssh(), ["cat", "/proc/self/status"])
    assert process.stdout is not None  # stderr is Ssh's own (its thread reads it)
    out = process.stdout.read()
    assert process.wait(TIMEOUT_S) == 0
    status = out.decode()
    assert f"\nPid:\t{process.pid}\n" in status
    assert not set(SIGNALS) & _mask(status, "SigBlk:"), status
    assert not {signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT} & _mask(status, "SigIgn:"), status


def _comm(pid: int) -> str:
    with open(f"/proc/{pid}/comm") as comm:
        return comm.read().strip()


def test_cancel_ends_an_ssh_started_from_the_pool() -> None:
    ssh = Ssh()
    process = _started_from_the_pool(ssh, ["sleep", "600"])
    try:
        wait_for(lambda: _comm(process.pid), lambda comm: comm == "sleep", TIMEOUT_S, "sleep exec'd")
        ssh.cancel()
        assert process.wait(TIMEOUT_S) == -signal.SIGTERM
    finally:
        process.kill()
        process.wait(TIMEOUT_S)


def test_a_missing_command_is_one_line() -> None:
    ssh = Ssh()
    process = _started_from_the_pool(ssh, ["no-such-ssh-here"])
    assert process.wait(TIMEOUT_S) == SSH_FAILED  # ssh's own failure, which execnet reads as a host not reached
    assert ssh.last_said(settle=True) == "no-such-ssh-here: No such file or directory"
