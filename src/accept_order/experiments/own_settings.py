"""The work and backlog a report gives for its server: this tool's settings, true only of a server it started.

A server elsewhere (--target) runs its own configuration, which this tool neither set nor can read: 'target
127.0.0.1:8080, 2 workers, work 0 s, backlog 511' (ramp) stated the tool's defaults as that server's."""

from __future__ import annotations

from ..core.spec import ServerSpec
from ..servers.registry import known_by_replies


def own_settings(server: ServerSpec, work: str, backlog: bool = True) -> str:
    """', work W, backlog B' (`work` as the report spells it) for a server this tool started; '' for one
    elsewhere."""
    if known_by_replies(server):
        return ""
    return f", work {work}" + (f", backlog {server.backlog}" if backlog else "")
