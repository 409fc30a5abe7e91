"""The worker table's legend as a report of one server's runs says it: whose voluntary context switches a worker's
'sleeps' are is its kind's to say (ServerKind.sleeps): a launched Puma worker's server thread's (its wakeups), an
attached worker's every thread's, a built-in worker's its own (one thread: the legend's own words)."""

from __future__ import annotations

from rich.text import Text

from ..core.spec import ServerSpec
from ..render.workers import worker_legend
from ..servers.registry import KINDS


def sleeps_of(server: ServerSpec) -> str | None:
    """Whose switches the server's workers' sleeps count; None: the worker's own, or a kind not known here."""
    kind = KINDS.get(server.kind)
    return kind.sleeps if kind is not None else None


def sleeps_legend(server: ServerSpec, detail: bool = False) -> Text:
    """worker_legend, saying whose sleeps they are where the kind says it."""
    return Text(worker_legend(detail, sleeps_of(server)), style="dim")
