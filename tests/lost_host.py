"""A client host lost mid-load without a cluster: c2's first result replaced by its channel's end, as a host whose
link or machine went away leaves it (loads/hosts/driven.HostsLoad._heard sees CLOSED), and c2 reached anew for the
next load. For the tests of what the error line and the file say then (lost exit, per mode, served nothing), which
drive c1 and c2 through popen gateways (test_clients_kept's `spawned`) from the fixture `c2_lost_once`: a test takes
it with `spawned` (`from lost_host import c2_lost_once, spawned`: pytest finds a fixture's own fixtures in the test's
module).

Imported by name, as conftest's helpers are (tests/ is on sys.path; no test_ prefix, so pytest collects nothing
here)."""

from __future__ import annotations

from typing import Any

import pytest
from test_clients_cli import own_address
from test_clients_kept import spawned  # noqa: F401  # the fixture: popen gateways in place of ssh

from accept_order.loads.hosts import driven
from accept_order.loads.hosts.remote_side import CLOSED


def lose_c2_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """c2's first result replaced by its channel's end: lost in the first load, reached anew for the next."""
    real = driven.HostsLoad._heard
    lost: list[str] = []

    def heard(self: driven.HostsLoad, p: Any, message: Any) -> None:
        if p.host.destination == "c2" and isinstance(message, tuple) and message[0] == "result" and not lost:
            lost.append("c2")
            message = CLOSED  # its connection closed before it reported
        real(self, p, message)

    monkeypatch.setattr(driven.HostsLoad, "_heard", heard)


@pytest.fixture
def c2_lost_once(spawned: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> str:  # noqa: F811
    """Client hosts c1 and c2 as popen gateways (spawned), c2 lost in the first load (lose_c2_once): this host's
    address other than loopback, for the workers to listen on where the hosts reach them; skipped where there is
    none."""
    address = own_address()
    if address is None:
        pytest.skip("no address but loopback here")
    lose_c2_once(monkeypatch)
    return address
