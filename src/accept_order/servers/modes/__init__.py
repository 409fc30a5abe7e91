"""The registry of accept modes. Adding a mode means one module with one Mode class, listed here.

Everything else (analysis, reports, experiments, `compare`, `herd`) reads a mode's metadata and never
its name: `model` (the idle order it predicts), `queue` (shared or per worker), `herds`, `batches`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...core.errors import ModeUnavailable, PlanError
from ...core.kinds import DEFAULT_MODE
from .accept_mutex import AcceptMutexMode
from .base import Listeners, Mode, Waiter
from .blocking import BlockingMode
from .fd_pass import FdPassMode
from .incoming_cpu import IncomingCpuMode
from .io_uring import IoUringMode
from .readiness import EpollExclusiveMode, EpollHerdMode, PollMode, SelectMode
from .reuseport import ReuseportMode
from .reuseport_cpu import ReuseportCpuMode
from .shared_epoll import EpollSharedMode

__all__ = [
    "DEFAULT_MODE",
    "MODES",
    "Listeners",
    "Mode",
    "Waiter",
    "get_mode",
    "parse_modes",
    "require_mode",
]

MODES: dict[str, Mode] = {
    m.name: m
    for m in (
        BlockingMode(),
        EpollExclusiveMode(),
        EpollSharedMode(),
        EpollHerdMode(),
        PollMode(),
        SelectMode(),
        ReuseportMode(),
        ReuseportCpuMode(),
        IncomingCpuMode(),
        AcceptMutexMode(),
        FdPassMode(),
        IoUringMode(),
    )
}


def get_mode(name: str) -> Mode:
    try:
        return MODES[name]
    except KeyError:
        raise PlanError(
            f"unknown mode {name!r}; choose one of: {', '.join(MODES)} (see 'accept-order modes')"
        ) from None


def require_mode(name: str) -> Mode:
    """The mode, or ModeUnavailable saying what this platform lacks."""
    mode = get_mode(name)
    reason = mode.unavailable()
    if reason:
        raise ModeUnavailable(f"mode {name!r} is not available here: {reason}")
    return mode


def parse_modes(text: str, known: Sequence[str] | None = None) -> list[str]:
    """`"blocking, reuseport"` -> names; `"all"` -> every mode; PlanError for unknown, repeated or none.
    `known`: the names to accept (default: the built-in modes; the CLI passes every server's)."""
    known = list(MODES) if known is None else list(known)
    if text.strip() == "all":
        return known
    names = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in names if m not in known]
    if unknown or not names:
        raise PlanError(
            f"unknown mode(s): {', '.join(unknown) or '(none given)'}; choose from {', '.join(known)} "
            "or all (see 'accept-order modes')"
        )
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise PlanError(f"mode(s) given more than once: {', '.join(repeated)}")
    return names
