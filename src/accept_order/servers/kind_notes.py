"""What a report says of a server's kind beside its figures: what this tool's launch of it does that a user's does
not, and, for a server attached by pid that serves with the threads of one process, why no thread's share is known."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.spec import ServerSpec
from .registry import KINDS, threads_are_workers


def launch_note(spec: ServerSpec) -> str | None:
    """What this tool's launch of the spec's kind does that a user's does not (ServerKind.launch_note): said
    beside unseen_note in each report of a run; None for a kind with nothing to say, or one not known here."""
    kind = KINDS.get(spec.kind)
    return kind.launch_note(spec) if kind is not None else None


def threads_note(evidence: Mapping[str, Any]) -> str | None:
    """For a server attached by pid that is one process serving with its threads (evidence `threads`, read as
    the run started: servers/attached.py), what its report must say in place of a worker's share and fairness:
    threads share one fd table, so /proc tells which process holds a connection, never which thread."""
    threads = evidence.get("threads")
    if not isinstance(threads, Mapping) or not isinstance(count := threads.get("count"), int) or count < 2:
        return None
    program, argv = str(threads.get("program", "")), [str(a) for a in threads.get("argv", [])]
    if not threads_are_workers(program, argv):
        return None
    who = f"pid {threads.get('pid', '?')}" + (f" ({program})" if program else "")
    return (
        f"{who} serves with {count} threads, and threads share one fd table: /proc says which process holds a "
        "connection, never which thread, so the counts are the process's and no thread's share or fairness can "
        "be read (observe counts each thread's accepts with bpftrace)"
    )
