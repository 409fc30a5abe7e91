"""What a latency report says about the load generator beside the server: that it was CPU-bound or starved, that it
shares the workers' CPUs and how long it waited for one, and how much of the host's CPUs others used meanwhile."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rich.text import Text

from ...core.cgroup_cpu import throttled_said
from ...core.measures import DriverStats
from ...core.run_warnings import RunWarning, WarningKind, unique, warn
from ...loads.generator import STARVED, client_bound, driver_warnings
from ...render.evidence import OTHERS_SHOWN, machine_busy
from ...render.text import plural
from ...servers.registry import unseen_note
from ..own_settings import acceptors
from .result import LatencyResult


def _label(result: LatencyResult) -> str:
    return result.server.label


def load_notes(results: Sequence[LatencyResult], name: Callable[[LatencyResult], str] = _label) -> list[Text]:
    """What to say about the load generator over runs with the same settings, each thing once: that it
    was CPU-bound or starved (yellow), else, when it shares the CPUs with the workers, that it does and
    how long it waited for a CPU (its wait is part of every latency; the seed's client had its own box).
    `name` names a run where the host's CPUs are said per run (sweep: its row's name, '4 limit')."""
    if not results:
        return []
    first = results[0]
    procs, workers, cpus = first.load.driver_procs, first.server.workers, first.environment.cpu_count
    drivers = [d for r in results for d in r.drivers]
    bound = [w for r in results if (w := client_bound(list(r.drivers), r.worker_cpu_s, r.wall_s, r.worker_cpus))]
    if first.hosts:  # drivers on client hosts: more hosts give them CPU, --load-cpus only this host's
        bound = [warn(WarningKind.CLIENT_BOUND_HOSTS, **w.figures) for w in bound]
    helpers = max(acceptors(r.server) for r in results)  # an acceptor (fd-pass's, Node's primary): the run's own
    warnings = driver_warnings(drivers, workers, cpus, procs, helpers)
    # the workers run on another host (--target), or the drivers do (--clients), or each on CPUs of their own
    # (--load-cpus apart from --cpus): neither waited for the other
    apart = bool(first.load.cpus) and bool(first.server.cpus) and not set(first.load.cpus) & set(first.server.cpus)
    elsewhere = unseen_note(first.server) is not None or bool(first.hosts) or apart
    if elsewhere:  # the drivers waited for their own host's CPUs, not for the workers'
        warnings = [elsewhere_wait(w, drivers) for w in warnings]
    if any(throttled_said(r.evidence.get("machine")) for r in results):  # its limit held them, not others
        warnings = [limit_wait(w, drivers) for w in warnings]
    if bound:  # says more than "a driver was CPU-bound": the workers idled meanwhile
        warnings = [w for w in warnings if w.kind is not WarningKind.DRIVER_SATURATED]
    notes = [Text(f"Warning: {w}", style="yellow") for w in unique([*bound, *warnings])]
    waits = [(d.runqueue_s or 0) / d.wall_s for d in drivers if d.wall_s and d.runqueue_s is not None]
    notes += host_notes(results, name)
    if procs + workers > cpus and not any(w > STARVED for w in waits) and not elsewhere:  # else a warning said it
        who = ("it", "its", "runs") if procs == 1 else ("they", "their", "run")  # not '1 processes run'
        wait = f"; {who[0]} waited for a CPU at most {100 * max(waits):.0f}% of {who[1]} time" if waits else ""
        said = f"The load generator's {plural(procs, 'process')} {who[2]} on the same {plural(cpus, 'CPU')} as the "
        notes.append(
            Text(f"{said}{plural(workers, 'worker')}{wait}; that wait is part of the measured latencies.", style="dim")
        )
    return notes


def elsewhere_wait(warning: RunWarning, drivers: Sequence[DriverStats]) -> RunWarning:
    """The drivers' wait for a CPU, said without the workers when they run on another host."""
    if warning.kind not in (WarningKind.DRIVERS_STARVED, WarningKind.DRIVERS_WAITED_FOR_OTHERS):
        return warning
    share = max((d.runqueue_s or 0) / d.wall_s for d in drivers if d.wall_s)
    return warn(WarningKind.CLIENT_WAITED, percent=100 * share)


def limit_wait(warning: RunWarning, drivers: Sequence[DriverStats]) -> RunWarning:
    """The drivers' wait for a CPU said without naming other processes where the run's cgroup was throttled:
    a throttled task waits runnable (run-queue time), and host_notes says the throttle."""
    if warning.kind is not WarningKind.DRIVERS_WAITED_FOR_OTHERS:
        return warning
    return elsewhere_wait(warning, drivers)


def host_notes(results: Sequence[LatencyResult], name: Callable[[LatencyResult], str] = _label) -> list[Text]:
    """The host's CPUs over each run beside the run's own processes' CPU (workers and load generator), said
    when others used a share worth naming: a wait for a CPU is then not only the run's own doing. Where the
    workers' CPU was not read, the load generator's share and the rest unsplit, when the rest is as large as
    others' would be named (the load generator's own CPU is no sign of others')."""
    notes = []
    for r in results:
        who = f"{name(r)}: " if len(results) > 1 else ""
        cpus = r.environment.cpu_count
        throttled = throttled_said(r.evidence.get("machine"))
        unsplit = r.host_busy_unsplit
        shares = r.others_cpu_share
        if unsplit is not None and unsplit[0] - unsplit[1] >= OTHERS_SHOWN:
            busy, generator = unsplit
            text = machine_busy(busy, generator * cpus, cpus, server_read=False)
            why = f"; but {throttled}" if throttled else ", so waits for a CPU may be others'"
            notes.append(Text(f"{who}{text} during the run{why}", style="yellow"))
        elif unsplit is None and shares is not None and shares[1] >= OTHERS_SHOWN:
            busy, others = shares
            text = machine_busy(busy, (busy - others) * cpus, cpus)
            why = f"; but {throttled}" if throttled else ", so waits for a CPU are partly theirs"
            notes.append(Text(f"{who}{text} during the run{why}", style="yellow"))
        elif throttled:  # others took little: the wait was the limit's
            notes.append(Text(f"{who}{throttled[0].upper()}{throttled[1:]}.", style="yellow"))
    return notes
