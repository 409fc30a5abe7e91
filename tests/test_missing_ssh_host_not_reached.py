"""Review RT of 2d3bd20: ssh is started through core/blocked_pool's wrapper, so a missing ssh is no longer
Popen's FileNotFoundError in this process but the wrapper's failed exec in the child. execnet reads a child that
ends before its bootstrap answers as a host not reached only when it exits 255 (ssh's own failures); on the
wrapper's 127 it went on to a gateway with nothing behind it, and the line blamed the host's Python:
'client host c1: its Python did not start or answer (ssh: No such file or directory)'. And a lone host's close,
which ran in the main thread where execnet starts threads of its own."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.core.hosts import ClientHosts
from accept_order.core.signal_order import SIGNALS
from accept_order.loads.hosts import gateways


def test_a_missing_ssh_is_a_host_not_reached(tmp_path: Path) -> None:
    no_ssh = tmp_path / "bin"
    no_ssh.mkdir()  # PATH with no ssh on it: the wrapper's execvp fails (sys.executable is a full path)
    args = ["latency", "--clients", "c1,c2", "--target", "192.0.2.1:9", "-w", "1", "--duration", "1s"]
    result = run_cli(args, extra_env={"PATH": str(no_ssh)})
    line = assert_one_error_line(result, 1)
    assert line == "accept-order: error: client host c1: could not be reached over ssh (ssh: No such file or directory)"


def test_closing_one_host_leaves_the_signals_to_the_main_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    """Review RT of 2d3bd20: Gateways.close closed a lone host from the calling (main) thread, where execnet's
    Group.terminate starts a WorkerPool's threads of its own (safe_terminate), unblocked: for up to CLOSE_TIMEOUT_S
    they could take the second of two signals. Now it runs in a BlockedPool's thread, as for several hosts."""
    closed_with: list[set[int]] = []

    def close(self: gateways._Reaching) -> None:  # what execnet's threads would inherit: this thread's mask
        closed_with.append(set(signal.pthread_sigmask(signal.SIG_BLOCK, [])))

    monkeypatch.setattr(gateways._Reaching, "close", close)
    hosts = gateways.Gateways(ClientHosts(("c1",)))
    hosts._reaching = [object.__new__(gateways._Reaching)]  # no execnet group: close() is the recorder above
    hosts.close()
    assert closed_with and set(SIGNALS) <= closed_with[0], closed_with
