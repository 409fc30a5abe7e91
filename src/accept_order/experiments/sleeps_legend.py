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


def ids_of(server: ServerSpec) -> str:
    """What the worker table calls its workers' ids: "tid" where the kind's workers are threads of one process
    (HAProxy's nbthread, h2o's event loops: no process has those ids), "pid" otherwise."""
    kind = KINDS.get(server.kind)
    return "tid" if kind is not None and (kind.threads_are_workers or kind.loops_are_workers) else "pid"


def sleeps_legend(server: ServerSpec, detail: bool = False) -> Text:
    """worker_legend, saying whose sleeps they are where the kind says it."""
    return Text(worker_legend(detail, sleeps_of(server)), style="dim")
