"""accept-order: show, measure and explain how the kernel hands new connections to worker processes."""

from .api import make_plan, run, run_plan
from .errors import AcceptOrderError, ListenError, ModeUnavailable, PlanError, WorkerError
from .modes import MODES, available_modes
from .records import ConnectionRecord, Plan, RunResult, WorkerCounters
from .supervisor import WorkerPool

__all__ = [
    "MODES",
    "AcceptOrderError",
    "ConnectionRecord",
    "ListenError",
    "ModeUnavailable",
    "Plan",
    "PlanError",
    "RunResult",
    "WorkerCounters",
    "WorkerError",
    "WorkerPool",
    "available_modes",
    "make_plan",
    "run",
    "run_plan",
]
__version__ = "0.1.0"
