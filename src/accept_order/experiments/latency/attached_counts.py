"""What the per-worker table of a server attached by pid rests on, when its replies name no worker: the kernel's
accept counts (experiments/session.py), and the accepts that table leaves out (workers started during the run)."""

from __future__ import annotations

from rich.text import Text

from .kept_load_words import finished_unit
from .kept_report import found_holding, passed_on
from .result import LatencyResult


def kernel_counts_text(result: LatencyResult) -> Text | None:
    """Where the per-worker counts of a server that does not name its workers came from."""
    kernel = result.evidence.get("accept_counts")
    if not isinstance(kernel, dict):
        return None
    if passed_on(result):
        return Text(
            f"served per worker: not known: the replies do not name a worker, and the kernel's accept count is the "
            f"master's (pid {result.server.attach[0]}), which accepted the connections itself "
            f"({kernel.get('why', '?')})",
            style="yellow",
        )
    if kernel.get("available"):
        kept = (
            ": the connections each accepted, not the requests over them (the replies do not name a worker)"
            if result.load.keeps_connections
            else _failed_accepted(result)
        )
        return Text(f"served per worker: accepts counted by the kernel ({kernel.get('why', '?')}){kept}", style="dim")
    unknown = (
        f"the replies do not name a worker and the kernel's accept counts are not available here "
        f"({kernel.get('why', '?')})"
    )
    if found_holding(result) is not None:  # 'not known' beside the kept table's requests per holder read as false
        return Text(
            f"served per worker: '-' in its served column: {unknown}; the kept connections per worker table gives "
            "the requests over the pool's connections, each for the worker the client found holding its connection "
            "once the pool was filled; the latencies above are complete",
            style="yellow",
        )
    return Text(f"served per worker: not known: {unknown}; the latencies above are complete", style="yellow")


def _failed_accepted(result: LatencyResult) -> str:
    """Where the kernel counted more accepts than connections were served: the count is of the connections each
    worker accepted, failed or not (an attached HTTPS port's 50 plain requests, each answered 400, read as 18, 11, 4
    and 17 'served' beside 'served 0, errors 50'). One request a connection: an accept is a connection."""
    if sum(result.served) <= result.ok:
        return ""
    failed = sum(result.errors.values())  # not the accepts less the served: a count cut short places fewer
    return (
        f": the connections each accepted, failed or not ({failed:,} failed, below): a worker's count is what it "
        "accepted, not what it served"
    )


def unplaced_text(result: LatencyResult) -> Text | None:
    """The accepts the per-worker table of an attached server leaves out: those of workers its master started
    during the run (a reload), named where the kernel's count followed the master's children, else how many
    served connections no attached worker accepted (one request each: each served connection was accepted once)."""
    kernel = result.evidence.get("accept_counts")
    if not isinstance(kernel, dict) or not kernel.get("available"):
        return None
    placed, unit = sum(result.served), finished_unit(result.load)
    master = int(kernel.get("master_accepted") or 0)
    if master and placed:  # its workers accepted too: it is one of them (uWSGI without --master), not a hand-over
        return Text(
            f"pid {result.server.attach[0]}, the attached master, accepted {master:,} connections itself (the "
            f"kernel's count per pid) beside the {placed:,} its children accepted: it serves as a worker too (as "
            f"uWSGI without --master does), and the table leaves it out",
            style="yellow",
        )
    if master:
        return Text(
            f"pid {result.server.attach[0]}, the attached master, accepted {master:,} "
            f"connections itself (the kernel's count per pid): it hands each to a worker over a Unix socket (fd-pass, "
            f"as Node's cluster does under SCHED_RR), so the count cannot say which worker served them",
            style="yellow",
        )
    appeared = {str(pid): int(n) for pid, n in (kernel.get("appeared") or {}).items() if n}
    if appeared:
        each = ", ".join(f"pid {pid} {n:,}" for pid, n in appeared.items())
        return Text(
            f"workers that appeared during the run (children of pid {kernel.get('followed', '?')} that were not "
            f"attached, as a reload starts) accepted {sum(appeared.values()):,} connections the table leaves out "
            f"({each}); the table's {placed:,} are the attached workers' alone",
            style="yellow",
        )
    missing = result.ok - placed
    if result.load.keeps_connections or missing <= 0:  # kept: requests and accepts are not the same count
        return None
    said = f"the table places {placed:,} of the {result.ok:,} {unit}s served: the other {missing:,}"
    before = kernel.get("reading_before_s")
    if isinstance(before, (int, float)) and before > 0:  # the count stopped early: no worker is to blame for them
        when = f"{before:.2f} s" if before >= 0.01 else "under 10 ms"
        why = f"are not placed: the kernel's count stops at bpftrace's last reading, {when} before the run ended"
        return Text(f"{said} {why} (it never ran its END block), and the accepts since are in no count", style="yellow")
    return Text(f"{said} {_unplaced_why(result, kernel)}", style="yellow")


# io_uring's accepts (IORING_OP_ACCEPT, the builtin io_uring mode's) run in the kernel without the accept call the
# count's tracepoint sees: an attached worker that accepts so is counted 0 however many it served
THROUGH_IO_URING = "accepted through io_uring, which makes no accept call for the trace to see"


def _unplaced_why(result: LatencyResult, kernel: dict[str, object]) -> str:
    """Why served connections went uncounted: workers started during the run that the count did not follow
    (several pids attached; a kernel without BTF), or, where it did follow the master's children or the one
    process attached is itself the worker, accepts that made no accept call."""
    if "followed" in kernel:  # every child of the master was counted: no reload's worker is missing
        master = kernel["followed"]
        return (
            f"were accepted in no accept call of pid {master}'s children, attached or not: {THROUGH_IO_URING}, or "
            f"by a process that is not its child (a binary upgrade's new master's workers)"
        )
    attach = result.server.attach
    counted = kernel.get("counts")
    if len(attach) == 1 and isinstance(counted, dict) and str(attach[0]) in counted:  # it is the worker itself
        return f"were accepted in no accept call of pid {attach[0]}: {THROUGH_IO_URING}"
    return (
        "were accepted by processes that were not attached (workers started during the run, as a reload does, are "
        "not traced: "
        + ("attach their master's pid" if len(attach) > 1 else "this kernel lets no trace follow a master's children")
        + ")"
    )


def served_known(result: LatencyResult) -> tuple[int, ...] | None:
    """The served count per worker, or None where nobody could count it (the file holds zeros then): the kernel's
    counts not available, the master accepted every connection and passed it on (its workers accepted none), or
    connections were served and no row holds one (replies that named no worker)."""
    kernel = result.evidence.get("accept_counts")
    unknown = isinstance(kernel, dict) and not kernel.get("available")
    unnamed = result.ok and not sum(result.served)  # a server elsewhere whose replies named no worker (reply_keys)
    return None if unknown or unnamed or passed_on(result) else result.served
