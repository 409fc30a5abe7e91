"""Which accepts the accept tracepoints' bpftrace programs (accepts.py) count, and under which id.

bpftrace's `pid` is the process's id (the thread-group id), the same for all its threads; `tid` is the thread's
own. A filter `pid == 381` on HAProxy's thread 381 never matched, and `pid == 380` (the main thread's id, the
process's too) matched every thread's accepts: `latency --attach 380,381,382,384` read accepted "8 0 0 0" where
HAProxy's own count was [4 0 1 4]. The workers that are threads (core/processes.thread_workers: ids sharing a
process, or not its main thread) are filtered and counted by `tid`.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.processes import thread_workers  # which ids are threads: one rule, the usage's too

__all__ = ["accepted_by", "counted_as", "plain_comm", "thread_workers"]


COMM_MAX = 15  # TASK_COMM_LEN less its NUL: a longer name is no thread's


def plain_comm(name: str) -> bool:
    """A thread name a bpftrace string literal holds as it is (no quote, backslash or control character)."""
    return 0 < len(name.encode()) <= COMM_MAX and name.isprintable() and not set(name) & {'"', "\\"}


def counted_as(threads: frozenset[int] = frozenset()) -> str:
    """The bpftrace expression an accept is counted under: the process's id (`pid`), or the thread's (`tid`) for
    the `threads` counted as workers (thread_workers); where some workers are threads and others processes, each
    its own."""
    if not threads:
        return "pid"
    return f"(({' || '.join(f'tid == {int(t)}' for t in sorted(threads))}) ? tid : pid)"


def accepted_by(
    pids: Sequence[int] | None,
    outcome: str = "args->ret >= 0",
    children_of: int | None = None,
    threads: frozenset[int] = frozenset(),
    comms: Sequence[str] = (),
) -> str:
    """The bpftrace predicate: an accept that succeeded (or another `outcome`), in one of `pids` (any pid:
    None; none: []) or, with `children_of`, in any child of that process (its parent's tgid read from the
    kernel's task struct, which needs the kernel's BTF: see following()), or in a thread named one of `comms`
    (a newcomer of the server's program: a reload's worker, observe's newcomers.py). Those of `pids` among
    `threads` are threads, matched by their own id (thread_workers)."""
    pred = outcome
    if pids is not None:
        whose = [f"{'tid' if p in threads else 'pid'} == {int(p)}" for p in pids]
        if children_of is not None:
            whose.append(f"curtask->real_parent->tgid == {int(children_of)}")
        whose += [f'comm == "{name}"' for name in comms if plain_comm(name)]
        pred += " && (" + (" || ".join(whose) or "pid < 0") + ")"
    return pred
