"""A server this tool starts on a port below net.ipv4.ip_unprivileged_port_start is refused before it runs, with
the built-in workers' line, where this process may not listen there.

'accept-order run --server nginx --port 80' as a user read nginx's own 'nginx exited with status 1: ... bind() to
127.0.0.1:80 failed (13: Permission denied)', HAProxy's 'cannot bind socket (Permission denied)', where 'serve
--port 80' said which ports are the user's and what to give. The tests run as root: who the process is (a user,
a root whose capabilities were dropped) is what /proc would say of them, and nothing may be launched.
"""

import subprocess
from pathlib import Path

import pytest

from accept_order.core import capabilities
from accept_order.core.errors import ListenError, ServerUnavailable
from accept_order.core.spec import DEFAULT_KIND, ServerSpec
from accept_order.servers.modes import base
from accept_order.servers.registry import KINDS, launched_kinds

NO_BIND_SERVICE = ~(1 << capabilities.NET_BIND_SERVICE.bit)


def refused(kind: str, uid: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    setting = tmp_path / "ip_unprivileged_port_start"
    setting.write_text("1024\n")
    monkeypatch.setattr(base, "UNPRIVILEGED_PORT_START", str(setting))
    monkeypatch.setattr(base.os, "geteuid", lambda: uid)
    monkeypatch.setattr(capabilities, "effective_capabilities", lambda: 0 if uid else NO_BIND_SERVICE)

    def launched(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"{kind} was launched: {args}")

    monkeypatch.setattr(subprocess, "Popen", launched)
    mode = next(iter(KINDS[kind].modes()))
    try:
        server = KINDS[kind].make(ServerSpec(kind=kind, mode=mode, port=80))
        with pytest.raises(ListenError) as refusal:
            server.start()
    except ServerUnavailable as exc:  # not installed here: another line, said before the port
        pytest.skip(f"{kind}: {exc}")
    return str(refusal.value)


# the built-in workers bind in this process, and say so at the bind (test_privileged_port_refusal.py)
@pytest.mark.parametrize("kind", [kind for kind in launched_kinds() if kind != DEFAULT_KIND])
def test_a_user_is_told_which_ports_are_theirs(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert refused(kind, 1000, tmp_path, monkeypatch) == (
        "not allowed to listen on 127.0.0.1 port 80: ports below 1024 are root's "
        "(net.ipv4.ip_unprivileged_port_start): give --port 1024 or above, or run as root"
    )


def test_a_root_without_the_capability_is_told_it_lacks_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    line = refused("nginx", 0, tmp_path, monkeypatch)
    assert line.endswith("which this root lacks (its capabilities were dropped): give --port 1024 or above")
