"""accept-order: show, measure and explain how the kernel hands new connections to worker processes.

The public names load on first use (PEP 562), so that `import accept_order.cli` stays cheap: the
command line installs its signal handlers before anything heavy is imported.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.2.0"

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
    "AcceptOrderError": "errors",
    "ListenError": "errors",
    "ModeUnavailable": "errors",
    "PlanError": "errors",
    "WorkerError": "errors",
    "WorkerExited": "errors",
    "ConnectionRecord": "measures",
    "RunResult": "experiments.order.result",
    "WorkerCounters": "measures",
    "MODES": "servers.modes",
    "available_modes": "servers.registry",
    "WorkerPool": "servers.pool",
    "ConcurrentLoad": "spec",
    "ClosedLoopLoad": "spec",  # ConcurrentLoad's name before 0.3
    "SequentialLoad": "spec",
    "ServerSpec": "spec",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'accept_order' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
