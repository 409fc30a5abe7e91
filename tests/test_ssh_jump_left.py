"""A client host reached through a ProxyJump whose own hop never answers leaves nothing running once ssh's
ConnectTimeout (75168b9) has ended the attempt: ours times out in the banner exchange and SIGHUPs the jump's ssh,
which dies without ending its own ProxyCommand. 'latency --clients viaj --ssh-config CFG' (viaj's ProxyJump j,
j's ProxyCommand never speaking) said 'client host viaj: could not be reached over ssh (Connection to UNKNOWN port
65535 timed out)' after 17 s, exit 1, and left j's ProxyCommand running (reparented to init)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import psutil
import pytest

from accept_order.core.errors import LoadError
from accept_order.core.hosts import ClientHosts
from accept_order.loads.hosts import gateways

needs_ssh = pytest.mark.skipif(shutil.which("ssh") is None, reason="needs OpenSSH's client")
GONE_S = 10.0


def left(tmp_path: Path) -> list[int]:
    """The live processes whose command line names tmp_path (the jump's ProxyCommand), zombies aside."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if proc.info["status"] != psutil.STATUS_ZOMBIE and str(tmp_path) in " ".join(proc.info["cmdline"] or ()):
            found.append(proc.pid)
    return found


@needs_ssh
def test_a_silent_jump_host_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gateways, "CONNECT_TIMEOUT_S", 2)  # the tool's own; the rule is the same at 15
    silent = f'{sys.executable} -c "import time; time.sleep(1000)" {tmp_path}'
    config = tmp_path / "ssh_config"
    config.write_text(
        f"Host j\n  HostName 192.0.2.250\n  ProxyCommand {silent}\nHost viaj\n  HostName 192.0.2.251\n  ProxyJump j\n"
    )
    hosts = gateways.Gateways(ClientHosts(destinations=("viaj",), ssh_config=str(config)))
    try:
        with pytest.raises(LoadError, match="client host viaj: could not be reached over ssh"):
            hosts.connect("accept_order.loads.hosts.remote_side")
    finally:
        hosts.close()
        # killed at the failure, it is gone once reaped (init's doing, at once); left, it sleeps 1000 s
        _, alive = psutil.wait_procs([psutil.Process(pid) for pid in left(tmp_path)], timeout=GONE_S)
        for proc in alive:  # not to leave it to the next test
            proc.kill()
    assert not alive, "the jump's ProxyCommand outlived the run"
