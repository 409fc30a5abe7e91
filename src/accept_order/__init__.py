"""accept-order: show, measure and explain how the kernel hands new connections to worker processes.

The public names load on first use (PEP 562), so that `import accept_order.cli` stays cheap: the
command line installs its signal handlers before anything heavy is imported.
"""

from __future__ import annotations

# isort: off
from .core import startup as _startup  # noqa: F401  first: a Ctrl-C while the command starts is held
# isort: on

import importlib
from typing import Any

from .core.version import VERSION as __version__  # noqa: F401  (the package's version, as tools read it)

# name -> module under accept_order; the experiments' functions (run, latency, observe, ...) are added from
# their registry on first use (api.py)
_PUBLIC = {
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


def _public() -> dict[str, str]:
    from .experiments import PUBLIC

    return {**_PUBLIC, **dict.fromkeys(PUBLIC, "api")}


def __getattr__(name: str) -> Any:
    if name == "__all__":
        return sorted(_public())
    module = _public().get(name)
    if module is None:
        raise AttributeError(f"module 'accept_order' has no attribute {name!r}")
    # The server kinds, for whoever uses the API: a spec's label and a file's server check ask them.
    importlib.import_module(".servers.registry", __name__)
    return getattr(importlib.import_module(f".{module}", __name__), name)
