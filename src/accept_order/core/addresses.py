"""Where a server listens: --host resolved to an address, refused where no TCP server can listen, and a
warning where others can reach it. Apart from core/spec.py, imported where a --host is read (issue 30:
start-up), so that its warning's module loads only when an address is not loopback."""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

from .errors import PlanError

if TYPE_CHECKING:
    from .run_warnings import RunWarning

# The default --host, answered without ipaddress (its import is ~2 ms of every run's start-up): loopback, and
# already as ip_address spells it
LOOPBACK = "127.0.0.1"


def resolve_host(text: str) -> tuple[str, RunWarning | None]:
    """(address to listen on, warning or None). Names resolve (`localhost`); multicast and broadcast
    addresses are refused; an address others can reach gets a warning, because every reply names a
    worker's pid."""
    if not text:
        raise PlanError("--host needs an address or a name, e.g. 127.0.0.1 or localhost")
    if text == LOOPBACK:
        return text, None
    import ipaddress

    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        try:
            infos = socket.getaddrinfo(text, None, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            raise PlanError(f"--host {text!r} is neither an IP address nor a name this machine resolves") from None
        # Prefer IPv4 (what `nc localhost` tries first on most systems).
        infos.sort(key=lambda info: info[0] != socket.AF_INET)
        address = ipaddress.ip_address(infos[0][4][0])
    if address.is_multicast or (address.version == 4 and str(address) == "255.255.255.255"):
        raise PlanError(f"--host {address} is a multicast or broadcast address; a TCP server cannot listen there")
    if address.is_loopback:
        return str(address), None
    from .run_warnings import WarningKind, warn

    return str(address), warn(WarningKind.REACHABLE_HOST, address=str(address))
