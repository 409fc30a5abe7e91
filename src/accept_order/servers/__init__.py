"""What serves: the `Target` interface (servers/target.py) and the servers that implement it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..spec import ServerSpec
    from .target import Target

__all__ = ["make_target"]


def make_target(spec: ServerSpec, stamps: bool = False) -> Target:
    """The server a spec names, not yet started (start() it, and close() it on every path).
    `stamps`: workers keep each accept's time (serve's sequence)."""
    if spec.server == "remote":
        from .remote import RemoteServer

        return RemoteServer(spec)
    if spec.server == "attached":
        from .attached import AttachedServer

        return AttachedServer(spec)
    if spec.server == "haproxy":
        from .haproxy import HaproxyServer

        return HaproxyServer(spec)
    if spec.server == "node":
        from .node import NodeServer

        return NodeServer(spec)
    if spec.server == "gunicorn":
        from .gunicorn import GunicornServer

        return GunicornServer(spec)
    if spec.server == "nginx":
        from .nginx import NginxServer

        return NginxServer(spec)
    from .pool import WorkerPool

    return WorkerPool(spec, stamps=stamps)
