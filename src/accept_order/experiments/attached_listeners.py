"""What a run of a server attached by pid says of the listener it took connections to go to, where that rests on a
setting it could not read: a lone `[::]` in another network namespace, whose IPV6_V6ONLY decides whether IPv4
connections reach it, read from that namespace's /proc (setns, which netlink would need there, refused)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text


def v6only_note(evidence: Mapping[str, Any], host: str) -> Text | None:
    """The yellow line for evidence `v6only_unknown` (servers/attached.py); None where there is none."""
    listeners = evidence.get("v6only_unknown")
    if not isinstance(listeners, list) or not listeners:
        return None
    which = ", ".join(str(listener) for listener in listeners)
    return Text(
        f"whether {which} takes IPv4 connections (to {host}) is not known: its IPV6_V6ONLY was read from its network "
        "namespace's /proc, which has no column for it (that namespace may not be entered: setns needs CAP_SYS_ADMIN "
        "over it, which the run lacked), so it was taken to, as Linux's default (net.ipv6.bindv6only 0) has it; "
        "were it set, the run's connections went to no listener of the server (refused, or another's)",
        style="yellow",
    )
