"""accept-order: show, measure and explain how the kernel hands new connections to worker processes.

The public names load on first use (PEP 562), so that `import accept_order.cli` stays cheap: the
command line installs its signal handlers before anything heavy is imported.
"""

from __future__ import annotations

import importlib
from typing import Any

from .core.version import VERSION as __version__  # noqa: F401  (the package's version, as tools read it)

_PUBLIC = {
    "run": "api",
    "compare": "api",
    "compare_latency": "api",
    "herd": "api",
    "latency": "api",
    "sweep_accept_batch": "api",
    "sequential": "api",
    "burst": "api",
    "ramp": "api",
    "reload": "api",
    "repeat": "api",
    "serve": "api",
    "inspect": "api",
    "atlas": "api",
    "observe": "api",
    "AcceptOrderError": "core.errors",
    "ListenError": "core.errors",
    "ModeUnavailable": "core.errors",
    "PlanError": "core.errors",
    "WorkerError": "core.errors",
    "WorkerExited": "core.errors",
    "ConnectionRecord": "core.measures",
    "RunResult": "experiments.order.result",
    "WorkerCounters": "core.measures",
    "MODES": "servers.modes",
    "available_modes": "servers.registry",
    "WorkerPool": "servers.pool",
    "ConcurrentLoad": "core.spec",
    "ClosedLoopLoad": "core.spec",  # ConcurrentLoad's name before 0.3
    "SequentialLoad": "core.spec",
    "ServerSpec": "core.spec",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'accept_order' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
