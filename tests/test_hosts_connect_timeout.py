"""A client host whose address never answers ends the run with one line, not a wait with nothing on the screen.

ssh's own ConnectTimeout is none: `latency --clients c1,10.99.99.99` (an address that drops packets) sat 12 minutes
with nothing on the screen before a Ctrl-C. The tool gives ssh a ConnectTimeout of its own unless the user's ssh
config sets one for that destination (`ssh -G` shows it), which stays theirs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from cluster import Cluster, cluster_fixture
from test_clients_faults import LONG, assert_nothing_left, load_args, start

from accept_order.loads.hosts import gateways

cluster = cluster_fixture(clients=1)
needs_ssh = pytest.mark.skipif(shutil.which("ssh") is None, reason="needs OpenSSH's client")
# The tool's own timeout, then python's start and the run's set-up on a busy machine; far below a hang's minutes.
ENDS_WITHIN_S = gateways.CONNECT_TIMEOUT_S + 75


def silent_host(c: Cluster, tmp_path: Path, timeout_line: str = "") -> str:
    """c1's ssh entry as `silent`, with no ConnectTimeout (or `timeout_line`) and a ProxyCommand that never
    speaks: as an address whose packets are dropped, the handshake never gets an answer."""
    entry = c.ssh_config.read_text().split("\n\n")[0]
    kept = [line for line in entry.replace("Host c1", "Host silent").splitlines() if "ConnectTimeout" not in line]
    proxy = f'  ProxyCommand {sys.executable} -c "import time; time.sleep(1000)" {tmp_path}'
    return "\n" + "\n".join([*kept, proxy, *([timeout_line] if timeout_line else [])]) + "\n"


@needs_ssh
def test_a_host_that_never_answers_is_one_line_within_the_tools_timeout(cluster: Cluster, tmp_path: Path) -> None:
    run = start(tmp_path, *load_args(cluster, tmp_path, "c1,silent", silent_host(cluster, tmp_path)), *LONG)
    try:
        code = run.wait(ENDS_WITHIN_S)
    except subprocess.TimeoutExpired:
        run.proc.kill()
        run.proc.wait(30)
        # its ssh, in a session of its own and still in its handshake, would not notice the coordinator's end
        for proc in psutil.process_iter(["cmdline"]):
            if proc.pid != os.getpid() and str(tmp_path) in " ".join(proc.info["cmdline"] or ()):
                proc.kill()
        pytest.fail(f"still waiting for the silent host after {ENDS_WITHIN_S} s")
    assert code == 1, run.err.text
    [line] = run.error_lines()
    assert line.startswith("accept-order: error: client host silent: could not be reached over ssh"), line
    assert "timed out" in line, line
    assert_nothing_left(cluster, str(tmp_path))


@needs_ssh
def test_the_users_own_connect_timeout_is_kept(tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text("Host slow\n  HostName 192.0.2.1\n  ConnectTimeout 600\nHost plain\n  HostName 192.0.2.2\n")
    options = ["-F", str(config), "-o", "BatchMode=yes"]
    assert gateways.connect_timeout_unset(options, "plain")
    assert not gateways.connect_timeout_unset(options, "slow")  # theirs: no -o of ours before it
    assert not gateways.connect_timeout_unset(["-F", str(tmp_path / "none")], "plain")  # ssh's own error, later
