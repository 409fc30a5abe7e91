"""What a latency run saw besides queueing, in the words the model's sentence gives it (model_verdict.py): a herd,
a lock, a load generator short of CPU or waiting for one, connections that waited for a free slot, the kernel's SYN
retransmission timer, other processes' CPU; and an open loop offered more than its workers served."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...analysis.syn_retrans import RTO_FLOOR_US, slow_count, syn_stalls
from ...analysis.wakeups import HERD_THRESHOLD, wakeups_per_connection, workers_woken
from ...core.cgroup_cpu import throttled_said
from ...core.models import Model
from ...core.run_warnings import WarningKind
from ...core.text import and_join, plural
from ...loads.client_warnings import driver_warnings
from ...render.evidence import listener_drops_said
from ...servers.registry import known_mode
from .kept_load_words import finished_unit
from .result import LatencyResult

OTHERS_SEEN = 0.10  # other processes' share of all CPUs worth naming (render/evidence.OTHERS_SHOWN's)
CLIENT_WAIT = 0.02  # a client that waited for a CPU longer than this share of its time delayed replies


def by_label(result: LatencyResult) -> str:
    """How a sentence names a run by default: its server's label."""
    return result.server.label


def seen_besides_queueing(result: LatencyResult, name: Callable[[LatencyResult], str] = by_label) -> list[str]:
    """What the run itself saw that queueing does not model: a herd, a lock, a saturated client."""
    seen = []
    info = known_mode(result.server.kind, result.server.mode)
    # over kept connections a worker also sleeps between the requests of those it holds: its sleeps per
    # request are no count of the workers a connection woke; nor are more sleeps than its workers could wake
    woken = (
        None
        if result.load.keeps_connections
        else wakeups_per_connection(result.counters, result.ok, result.server.workers)
    )
    label = name(result)
    if info is not None and info.switches_are_wakeups and woken is not None and woken >= HERD_THRESHOLD:
        seen.append(f"{label} woke {workers_woken(woken, result.server.workers):.1f} workers per connection (a herd)")
    if info is not None and info.model == Model.LOCK_HOLDER:
        seen.append(f"{label} takes connections behind a lock")
    client = {WarningKind.DRIVER_SATURATED, WarningKind.DRIVERS_STARVED, WarningKind.DRIVERS_WAITED_FOR_OTHERS}
    warnings = driver_warnings(list(result.drivers), result.server.workers, result.environment.cpu_count)
    if any(w.kind in client for w in warnings):
        seen.append(f"the load generator was short of CPU during {label}")
    else:
        # The model gives each worker a CPU of its own and the client none of theirs. A client that waits for a CPU
        # (the workers', without --load-cpus; or its client hosts') reads a reply late: that wait is timed.
        waited = max(((d.runqueue_s or 0) / d.wall_s for d in result.drivers if d.wall_s), default=0.0)
        if waited > CLIENT_WAIT and (result.hosts or not result.load.cpus):
            where = "ran on CPUs of its client hosts" if result.hosts else "shared the workers' CPUs"
            hint = "" if result.hosts else "; --load-cpus gives it its own"
            seen.append(f"the load generator {where} during {label} (it waited for one {waited:.0%} of its time{hint})")
    late = result.late  # an open loop's connections that waited for one of the generator's -c slots
    if late and overload(result, name) is None:  # an overloaded run says so in its own lead
        seen.append(
            f"{late:,} of {label}'s {finished_unit(result.load)}s waited in the load generator for one of its "
            f"{result.load.concurrency} slots (a larger -c lets them start on time)"
        )
    stalls = syn_stalls(result.histogram, result.evidence)
    at_floor = result.histogram.percentile(99) >= RTO_FLOOR_US
    dropped = result.evidence.get("listener_drops")
    unit = finished_unit(result.load)
    if at_floor and isinstance(dropped, int) and dropped > 0:
        # the server's own listeners threw handshake packets away (probes/listeners.listener_drops, read per socket,
        # not host-wide): the run's clients' SYNs were sent again, whatever else a host-wide count holds, whether or
        # not TCPSynRetrans is read where the clients are (an attached server's namespace counts its SYN-ACKs), and
        # in a namespace of the run's own too, where they are the cause its SYNs were sent again
        seen.append(
            f"{label}'s p99 is among its {plural(slow_count(result.histogram), unit)} of 1 s or more, and "
            f"{listener_drops_said(dropped)} (its accept queue full: a client sends a dropped SYN again only after "
            "1 s, the kernel's retransmission timer, so that wait is the server's own overflow, not queueing)"
        )
        if stalls is not None and stalls.private:
            return seen  # the run's own SYNs sent again: a wait no CPU share explains
    elif at_floor and stalls is not None and stalls.private:
        # the p99 is at the retransmission floor and the run's own SYNs were sent again: a wait of the kernel's
        # timer, which no CPU share explains
        seen.append(
            f"{label}'s p99 is among its {plural(stalls.slow, unit)} of 1 s or more while SYNs were sent again (the "
            "kernel's 1 s retransmission timer, not queueing)"
        )
        return seen
    elif at_floor and stalls is not None:
        # a host-wide count may be all others' traffic, and a server that stalls 1 s gives such a p99 without one:
        # the timer is a may, said beside the CPU others used, not instead of it
        # an attached server's namespace counts the SYN-ACKs it sent again (the clients' SYNs are counted in theirs)
        what = "SYNs or SYN-ACKs were sent again in the server's network namespace" if stalls.servers else ""
        seen.append(
            f"{label}'s p99 is among its {plural(stalls.slow, unit)} of 1 s or more while "
            f"{what or 'SYNs were sent again host-wide'} (the kernel's 1 s retransmission timer may be part of it)"
        )
    shares = result.others_cpu_share
    if shares is not None and shares[1] >= OTHERS_SEEN:
        seen.append(f"other processes used {100 * shares[1]:.0f}% of the CPUs during {label}")
    throttled = throttled_said(result.evidence.get("machine"))
    if throttled:  # the run waited for its own CPU limit: not other processes', whatever share they took
        seen.append(f"{throttled} (during {label})")
    return seen


def something_else(runs: Sequence[LatencyResult], name: Callable[[LatencyResult], str] = by_label) -> str:
    """What the runs above the prediction saw besides queueing; a run that saw none of it is named as such, not left
    out: 'epoll, reuseport, io-uring, fd-pass above ...: the load generator shared the workers' CPUs during epoll;
    ... during reuseport; ... short of CPU during fd-pass' gave io-uring's excess no word, as if one of those were
    it."""
    said = [(r, seen_besides_queueing(r, name)) for r in runs]
    seen = [s for _, each in said for s in each]
    if seen:
        unseen = [name(r) for r, each in said if not each]
        none = f"; {and_join(unseen)}: none of these seen (noise, or what the run does not measure)" if unseen else ""
        return "something else is at work: " + "; ".join(seen) + none
    return "something else is at work (the run saw no herd, lock or client delay to name), or noise"


SHORT_SERVED = 0.97  # an open loop that served less than this share of its rate did not keep up with it


def overload(result: LatencyResult, name: Callable[[LatencyResult], str] = by_label) -> str | None:
    """An open loop that offered more than its workers served: ρ ≥ 1 by the measured service time, or a
    rate it did not serve (under SHORT_SERVED of it; of the connections due, in a --duration run) while its
    slots ran out (started late, or never)."""
    load, model = result.load, result.model
    if load.rate is None:
        return None
    rho = model.utilisation if model is not None else None
    if load.duration_s is not None and not result.interrupted:
        # A --duration schedule says how many were due: serving (nearly) all of them is keeping up, however long
        # the last took to answer after it. Served over the wall (first request to last answer) holds that
        # drain: 6,994 of 7,000 due at 1,400/s for 5 s, the last answered 0.19 s late, read 1,348/s 'served'.
        # A driver may stop one short at the deadline (as `unstarted` allows): at 10/s for 3 s, 29 of 30 with one
        # late is keeping up, where 97% of 30 is 29.1.
        due = round(load.rate * load.duration_s) - len(result.drivers)
        served_short = result.ok < SHORT_SERVED * due
    else:
        served_short = result.throughput < SHORT_SERVED * load.rate
    short = served_short and (result.late or result.unstarted)
    if not (rho is not None and rho >= 1) and not short:
        return None
    said = [f"ρ {rho:.2f}"] if rho is not None else []
    if result.late:
        said.append(f"{result.late:,} of {result.driven:,} started late, all {load.concurrency} in flight busy")
    if result.unstarted:
        said.append(f"{result.unstarted:,} due never started")
    return (
        f"{name(result)} was offered more than its workers served ({load.rate:,.0f}/s offered, "
        f"{result.throughput:,.0f}/s served; {', '.join(said)}): its latencies hold a queue that grew through "
        "the run, in the server"
        + (" and, past the connections in flight, in the load generator waiting for a free slot" if result.late else "")
    )
