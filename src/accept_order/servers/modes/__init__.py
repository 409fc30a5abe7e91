"""The registry of accept modes. Adding a mode means one module with one Mode class, listed here by name.

Everything else (analysis, reports, experiments, `compare`, `herd`) reads a mode's metadata and never
its name: `model` (the idle order it predicts), `queue` (shared or per worker), `herds`, `batches`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...core.errors import ModeUnavailable, PlanError
from ...core.kinds import DEFAULT_MODE
from ..lazy import Made

if TYPE_CHECKING:
    from collections.abc import Mapping

    from .base import Listeners, Mode, Waiter
else:  # mypy sees the names above, not this: beside a module __getattr__ it takes any other name for Any

    def __getattr__(name: str) -> Any:
        """Listeners, Mode and Waiter (base.py), where the pool and the workers import them from: base.py, and
        socket with it, imported when first asked for. The modes' names need neither (--help: the built-in kind's
        options)."""
        if name in ("Listeners", "Mode", "Waiter"):
            from . import base

            return getattr(base, name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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

# name -> where its Mode is, in the order `modes` lists them. Each module is imported when its mode is first asked
# for: a run imports its own mode's alone (issue 30: start-up), `modes` and `compare` every one.
MODES: Mapping[str, Mode] = Made(
    __name__,
    {
        "blocking": "blocking:BlockingMode",
        "epoll": "readiness:EpollExclusiveMode",
        "epoll-shared": "shared_epoll:EpollSharedMode",
        "epoll-herd": "readiness:EpollHerdMode",
        "poll": "readiness:PollMode",
        "select": "readiness:SelectMode",
        "reuseport": "reuseport:ReuseportMode",
        "reuseport-cpu": "reuseport_cpu:ReuseportCpuMode",
        "incoming-cpu": "incoming_cpu:IncomingCpuMode",
        "accept-mutex": "accept_mutex:AcceptMutexMode",
        "fd-pass": "fd_pass:FdPassMode",
        "io-uring": "io_uring:IoUringMode",
    },
)


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
