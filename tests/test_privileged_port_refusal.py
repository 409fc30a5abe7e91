"""A port the user may not listen on is refused saying why and what to do.

'accept-order serve --port 80' as a user read 'not allowed to listen on 127.0.0.1 port 80 (privileged port?)':
a guess, and no way out. The tests run as root, who may bind port 80: the kernel's EACCES is given by a socket
that refuses the bind, the setting by a file standing for /proc/sys/net/ipv4/ip_unprivileged_port_start, and who
the process is (its uid, CapEff, its user namespace) by what /proc would say of a user, a container's root whose
capabilities were dropped (which 'run as root' sent nowhere) and a root of `unshare -Ur`.
"""

import errno
import socket
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from accept_order.core import capabilities
from accept_order.core.errors import ListenError
from accept_order.servers.modes import base


class RefusingSocket:
    """A socket whose bind the kernel refuses as it does a user's bind of port 80."""

    closed = False

    def __init__(self, *args: Any) -> None:
        pass

    def setsockopt(self, *args: Any) -> None:
        pass

    def bind(self, address: Any) -> None:
        raise PermissionError(errno.EACCES, "Permission denied")

    def close(self) -> None:
        RefusingSocket.closed = True


USER = (1000, 0, False)  # uid, CapEff, in a user namespace of its own
ROOT_WITHOUT_IT = (0, ~(1 << capabilities.NET_BIND_SERVICE.bit), False)  # docker run --cap-drop NET_BIND_SERVICE
ROOT_OF_UNSHARE = (0, ~0, True)  # unshare -Ur: every capability, its own user namespace's
ROOT = (0, ~0, False)


def refusal(
    port: int, start: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, who: tuple[int, int, bool] = USER
) -> str:
    uid, cap_eff, own_namespace = who
    monkeypatch.setattr(base.os, "geteuid", lambda: uid)
    monkeypatch.setattr(capabilities, "effective_capabilities", lambda: cap_eff)
    monkeypatch.setattr(capabilities, "in_user_namespace", lambda: own_namespace)
    setting = tmp_path / "ip_unprivileged_port_start"
    setting.write_text(start)
    monkeypatch.setattr(base, "UNPRIVILEGED_PORT_START", str(setting))
    # base's own name for the socket module, not the module: nothing else in the process gets the fake
    monkeypatch.setattr(base, "socket", SimpleNamespace(**{**vars(socket), "socket": RefusingSocket}))
    RefusingSocket.closed = False
    with pytest.raises(ListenError) as refused:
        base.listen_socket("127.0.0.1", port, 16, reuseport=False)
    assert RefusingSocket.closed
    return str(refused.value)


def test_a_port_below_the_unprivileged_start_says_which_ports_are_the_users(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert refusal(80, "1024\n", tmp_path, monkeypatch) == (
        "not allowed to listen on 127.0.0.1 port 80: ports below 1024 are root's "
        "(net.ipv4.ip_unprivileged_port_start): give --port 1024 or above, or run as root"
    )


def test_the_machines_own_start_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert "give --port 2000 or above" in refusal(1500, "2000\n", tmp_path, monkeypatch)


def test_a_refusal_above_the_start_is_not_called_a_privileged_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    line = refusal(8080, "1024\n", tmp_path, monkeypatch)
    assert line == (
        "not allowed to listen on 127.0.0.1 port 8080, though ports from 1024 are anyone's: "
        "a security module or a cgroup's BPF program refused it"
    )


def test_a_root_without_the_capability_is_not_told_to_run_as_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert refusal(80, "1024\n", tmp_path, monkeypatch, ROOT_WITHOUT_IT) == (
        "not allowed to listen on 127.0.0.1 port 80: ports below 1024 need CAP_NET_BIND_SERVICE "
        "(net.ipv4.ip_unprivileged_port_start), which this root lacks (its capabilities were dropped): "
        "give --port 1024 or above"
    )


def test_a_root_of_its_own_user_namespace_is_told_whose_capability_it_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    line = refusal(80, "1024\n", tmp_path, monkeypatch, ROOT_OF_UNSHARE)
    assert line.endswith("which this process holds in a user namespace of its own only: give --port 1024 or above")
    assert "run as root" not in line


def test_a_root_holding_the_capability_is_refused_by_something_else(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert refusal(80, "1024\n", tmp_path, monkeypatch, ROOT) == (
        "not allowed to listen on 127.0.0.1 port 80, though this process holds CAP_NET_BIND_SERVICE: "
        "a security module or a cgroup's BPF program refused it"
    )
