"""The bpftrace program that counts accepts (accepts.py's AcceptCounter runs it): successful accept()/accept4()
returns per process or per worker thread, printed every READING_MS and at its END; and whether this kernel lets it
follow a master's children too (BTF), or refused to read a task's parent."""

from __future__ import annotations

import os
from collections.abc import Sequence

from . import bpftrace_readings as readings
from .accept_filter import accepted_by, counted_as
from .accept_ports import blocked_in_accept, seeded
from .bpftrace_messages import first_error_line
from .bpftrace_readings import COUNTS_BEGIN, COUNTS_END

EAGAIN = 11  # an accept that found no connection waiting
READING_MS = 250  # how often the program prints its running counts (bpftrace_readings.py)
# + our pid: the scheduling policy (none such: EINVAL) whose sched_get_priority_max a port-counting program takes for
# 'count from now' (begin()); accept_watch's are 0x20000000 and 0x40000000
BEGIN_POLICY = 0x10000000
BTF = "/sys/kernel/btf/vmlinux"  # the kernel's own type information: bpftrace reads task_struct's fields from it


def following(children_of: int | None) -> int | None:
    """`children_of` where this kernel lets bpftrace read a task's parent (it has BTF), else None: the counter
    then sees the given pids only, and a report says how many accepts it could not place."""
    return children_of if children_of is not None and os.path.exists(BTF) else None


# what bpftrace's first error names where it cannot read a task's parent: "Struct/union of type 'struct
# task_struct' does not contain a field named 'real_parent'", "Unknown struct/union: 'struct task_struct'"
PARENT_WORDS = ("real_parent", "task_struct", "curtask")


def refused_parent(stderr: bytes) -> bool:
    """Whether bpftrace's first error (past its harmless warnings) is about the parent field of the filter."""
    line = first_error_line(stderr)
    return any(word in line for word in PARENT_WORDS)


def program(
    pids: Sequence[int] | None,
    children_of: int | None = None,
    threads: frozenset[int] = frozenset(),
    descriptors: bool = False,
) -> str:
    """The bpftrace script: count successful accepts per tgid (bpftrace's `pid`), or per thread for the workers
    among `threads` (thread_workers), print them every READING_MS (what stands if END never comes) and at END.

    The pid filter is in the predicate so that other processes never reach the map: a busy machine
    otherwise fills it (4096 keys by default) with short-lived processes nobody asked about. `children_of`
    lets the children of one process in too (a master whose reload starts new workers mid-run). `descriptors`: the
    accepts (and empty ones) by the descriptor each was asked of too (@on, @eon: key, fd + 1, 0 where the call began
    before the probes attached), and the gaps after them (@gapon: bucket, pid, fd + 1), at END: accept_ports.py reads
    which port's listener it is, so that a server's other ports are told apart (a tracepoint argument: no kernel
    struct read, bpftrace's start-up as cheap)."""
    pred = accepted_by(pids, f"(args->ret >= 0 || args->ret == -{EAGAIN})", children_of=children_of, threads=threads)
    key = counted_as(threads)
    asked = on = eon = ends = marks = gapon = ""
    if descriptors:
        # after the exit probe: bpftrace 0.17 attaches the last first, so that an accept made while it attaches is
        # not counted with its descriptor unseen (before: ~100 a worker, 4,000 a second to another port); and from
        # begin() on only, where the window opens, none of those made while it attached at all
        enter = accepted_by(pids, "args->fd >= 0", children_of=children_of, threads=threads)
        asked = seeded(blocked_in_accept(pids or ()))  # the descriptors of accepts begun before it attached
        asked += (
            "tracepoint:syscalls:sys_enter_accept4, tracepoint:syscalls:sys_enter_accept\n"
            f"/{enter}/ {{ @fd[tid] = args->fd + 1; }}\n"
        )
        marks = "tracepoint:syscalls:sys_enter_sched_get_priority_max "
        marks += f"/args->policy == {BEGIN_POLICY + os.getpid()}/ {{ @begun = 1; }}\n"
        pred += " && @begun == 1"
        on, eon = f" @on[{key}, @fd[tid]] = count(); @tookfd[tid] = @fd[tid];", f" @eon[{key}, @fd[tid]] = count();"
        gapon = " @gapon[$k, pid, @tookfd[tid]] = count(); delete(@tookfd[tid]);"  # after an accept on that listener
        on_end = f'printf("{readings.DESCRIPTORS_COUNTED}\\n"); print(@on); print(@eon); print(@gapon); '
        ends = on_end + "clear(@on); clear(@eon); clear(@gapon); clear(@fd); clear(@tookfd); clear(@begun); "
    # clear() after print: bpftrace prints every non-empty map again on exit. The accepts that came back empty
    # (@empty: EAGAIN) at END only, marked as counted (bpftrace_readings.parse_empty): none after a run's accepts
    # is a server that takes one connection a wakeup (nginx's multi_accept off), the model's batch. And the time
    # from each accept that took a connection to the same thread's next accept call (@gap: GAP_BUCKETS), at END,
    # marked too (parse_gaps): a worker that serves one connection at a time serves it in between. A thread's
    # @took goes as it exits, so the map holds only live threads of the watched processes that took a connection
    # (bpftrace's maps keep 4,096 keys and drop the rest silently): kept, a master forking a worker per connection
    # or recycling them (gunicorn's max_requests) filled it with the dead, and no gap was timed after
    forget = " delete(@fd[tid]);" if descriptors else ""
    return (
        "tracepoint:syscalls:sys_exit_accept4, tracepoint:syscalls:sys_exit_accept\n"
        f"/{pred}/\n"
        f"{{ if (args->ret >= 0) {{ @[{key}] = count(); @took[tid] = nsecs;{on} }} "
        f"else {{ @empty[{key}] = count();{eon} }}{forget} }}\n"
        "tracepoint:syscalls:sys_enter_accept4, tracepoint:syscalls:sys_enter_accept\n"
        "/@took[tid]/\n"  # only the threads the filter let take a connection
        f"{{ $g = (nsecs - @took[tid]) / 1000; delete(@took[tid]); {GAP_BUCKETS} @gap[$k] = count();{gapon} }}\n"
        "tracepoint:sched:sched_process_exit /@took[tid]/ { delete(@took[tid]);"  # each thread's exit
        f"{' delete(@tookfd[tid]);' if descriptors else ''} }}\n"
        f"{asked}{marks}"
        f"{readings.reading_probe(READING_MS, 'print(@);')}"
        f'END {{ printf("{COUNTS_BEGIN}\\n"); print(@); clear(@); printf("{readings.EMPTY_COUNTED}\\n"); '
        f'print(@empty); clear(@empty); printf("{readings.GAPS_COUNTED}\\n"); print(@gap); clear(@gap); '
        f'clear(@took); {ends}printf("{COUNTS_END}\\n"); }}\n'
    )


# the gap's bucket $k of its µs $g, log-linear: 10 µs wide under 1 ms (0-99), 100 µs under 10 ms (100-189), 1 ms
# under 100 ms (190-279), 10 ms up to 1 s (280-369, the last holding all longer); bpftrace_readings.gap_us reads it
GAP_BUCKETS = (
    "$k = 369; if ($g < 1000) { $k = $g / 10; } else if ($g < 10000) { $k = 100 + ($g - 1000) / 100; } "
    "else if ($g < 100000) { $k = 190 + ($g - 10000) / 1000; } else if ($g < 1000000) { $k = 280 + ($g - 100000) / "
    "10000; }"
)


def begin() -> None:
    """Count from now on: a program with `descriptors` takes this call for its flag (no such policy: EINVAL)."""
    try:
        os.sched_get_priority_max(BEGIN_POLICY + os.getpid())
    except OSError:
        pass
