"""inspect's Python API."""

from __future__ import annotations

from .result import InspectResult
from .run import inspect as inspect_server


def inspect(pid: int | None = None, port: int | None = None, samples: int = 5) -> InspectResult:
    """How the server behind `pid` or `port` accepts, read from /proc (nothing sent, nothing signalled)."""
    return inspect_server(pid=pid, port=port, samples=samples)
