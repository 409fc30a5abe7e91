"""The kind of server a run measured, so a report can speak in that server's terms: the one launched, or for a server
attached by pid the program it runs as inspect named it (evidence `program`, servers/attached.py).

A pool whose workers accepted more than it opened was said to be closed 'as nginx's keepalive_requests, 1000 by
default, does' of whatever served it: an attached lighttpd (server.max-keep-alive-requests 20) that reopened 90 of
a pool of 8 read nginx's setting, its own program recorded in the same file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ...core.kinds import ServerKind
from ...servers.registry import KINDS
from .result import LatencyResult

if TYPE_CHECKING:
    from ...core.cures import ClientLimit


def serving_kind(result: LatencyResult) -> ServerKind | None:
    """The kind serving: the one launched, or for a server attached by pid the program it runs as inspect named it;
    None where not known (a program this tool does not know, a file from before the program was recorded, a
    --target)."""
    if not result.server.attach:
        return KINDS.get(result.server.kind)
    program = result.evidence.get("program")
    named = program.get("recognised") if isinstance(program, Mapping) else None
    return KINDS.get(named) if isinstance(named, str) else None


def closing_limits(result: LatencyResult) -> tuple[ServerKind, list[str], bool] | None:
    """The settings by which the server that served the run closes a kept connection after so many requests on it,
    or so long (nginx's keepalive_requests and keepalive_time), as its kind names them (ServerKind.cures); None
    where the kind is not known or has none that could have closed them: a launched server's own config lifts those
    it sets (ClientLimit.launched: nginx's keepalive_requests 1000000000 under a kept load), so only the limits it
    leaves at the server's default are named for it (Puma's max_fast_inline). The flag: one of them is a time."""
    from ...core.cures import ClientLimit  # made when asked, as the kinds' cures are (core/cures.py)

    kind = serving_kind(result)
    if kind is None:
        return None
    attached = bool(result.server.attach)
    limits = [
        cure.measure
        for cure in kind.cures
        if isinstance(cure.measure, ClientLimit) and (attached or _left_on(cure.measure))
    ]
    named = list(dict.fromkeys(limit.setting for limit in limits))
    return (kind, named, any(limit.timed for limit in limits)) if named else None


def _left_on(limit: ClientLimit) -> bool:
    """A limit the config this tool writes leaves as the server has it by default (Puma's max_fast_inline, 10):
    not one it sets (ClientLimit.launched), nor one that closes every connection (requests 1: HAProxy's option
    httpclose, which a launched HAProxy's config does not have)."""
    return not limit.launched and limit.requests != 1
