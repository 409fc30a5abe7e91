"""Whether a ramp's step held (judge) and what the kernel and the CPU counters saw during it (signals): the reasons
a knee is put down to (experiments/ramp/run.py reads them around each step)."""

from __future__ import annotations

from ...core.cgroup_cpu import throttle_sentence
from ...core.protocol import ABORTED
from ...render.evidence import listener_drops_said, machine_busy
from ...render.text import plural
from .plan import RampPlan
from .result import RampStep

SATURATED = 0.9  # a worker (or the workers together) on a CPU this share of the step is CPU-bound
CLIENT_PACED = "while the workers idled"  # said of a CPU-bound load generator: it set the step's pace
KEPT_RATE = 0.9  # an open-loop step that finished fewer than this share of what was offered did not keep up


def judge(step: RampStep, plan: RampPlan, workers: int) -> list[str]:
    """Why this step did not hold (empty: it held), then what else the kernel and the clocks say."""
    reasons: list[str] = []
    # a step Ctrl-C cut short counts its connections in flight as aborted: the stop's, not the server's failures
    stopped = step.errors.get(ABORTED, 0) if step.interrupted else 0
    if step.failed - stopped > plan.max_errors:
        # counted as latency and run count them ('200 × bad reply'): 'bad reply 200' read as an HTTP status
        by = ", ".join(f"{v} × {k}" for k, v in sorted(step.errors.items(), key=lambda kv: -kv[1]))
        reasons.append(f"{step.failed} failed ({by})")
    if plan.p99_ms is not None and step.p99_us is not None and step.p99_us > plan.p99_ms * 1000:
        reasons.append(f"p99 {step.p99_us / 1000:.1f} ms > {plan.p99_ms:g} ms")
    if plan.p999_ms is not None and step.p999_us is not None and step.p999_us > plan.p999_ms * 1000:
        reasons.append(f"p99.9 {step.p999_us / 1000:.1f} ms > {plan.p999_ms:g} ms")
    if step.kind == "rate" and step.driven < KEPT_RATE * (offered := step.offered_reported) * step.wall_s:
        to = f" to the client hosts that reported ({step.lost_hosts} lost)" if offered < step.offered else ""
        reasons.append(f"finished {step.driven / max(step.wall_s, 1e-9):.0f}/s of {offered:g}/s offered{to}")
    return reasons


def signals(step: RampStep, workers: int, cpus: int, coordinated: bool = False, kernel: str = "") -> list[str]:
    """What the kernel and the CPU counters saw during a step (said for every step; decisive for a knee).
    `coordinated`: the load went from client hosts to a server elsewhere, so this host's counters and CPUs
    are none of the step's; the server's listen counters count only where --observe-on brought them.
    `kernel`: this host's boot_id, which client hosts on this machine's CPUs report too (client_cpus)."""
    seen = []
    # a server elsewhere driven from here: this host's counters are the client's (the step keeps none of them)
    elsewhere = coordinated or step.server_unread
    counters = (step.server_counters or {}) if elsewhere else step.counters
    seen += _overflows(step, counters.get("TcpExtListenOverflows", 0), elsewhere)
    resets = counters.get("TcpEstabResets", 0) + counters.get("TcpExtTCPAbortOnData", 0)
    if resets:
        # The counters are the host's: a step of one request per connection whose every connection was answered
        # lost none to a reset (its client reads each reply to the end and closes without one), so they were
        # other traffic's, and a knee is not to be put down to them ('There: 12212 connections reset' beside 0
        # failed, helpers' tests). Kept connections are closed at the step's end, some maybe with a byte unread.
        theirs = "" if step.failed or step.connections else ", none of them this step's (it failed none)"
        seen.append(f"{plural(resets, 'connection')} reset host-wide{theirs}")
    busy = sum(step.worker_cpu)
    workers_bound = bool(step.worker_cpu) and (
        busy >= SATURATED * min(workers, cpus) or max(step.worker_cpu) >= SATURATED
    )
    if workers_bound:
        seen.append(f"workers on a CPU {100 * busy / min(workers, cpus):.0f}% of the time")
    if step.machine_cpu is not None and step.machine_cpu >= SATURATED and not coordinated:
        # without the workers' CPU (a server of the remote kind) the load generator's alone is known: no 'own 0%'
        read = bool(step.worker_cpu)
        seen.append(machine_busy(step.machine_cpu, busy + client_cpus(step, kernel), cpus, server_read=read))
    if said := throttle_sentence(step.throttled_ms or 0.0, step.wall_s, step.cpu_limit or ""):
        seen.append(said)  # the run's own CPU limit held it: not other processes, whatever share they took
    if step.driver_cpu >= SATURATED:
        text = f"load generator CPU-bound ({100 * step.driver_cpu:.0f}% of a CPU per process)"
        if step.worker_cpu and not workers_bound:  # the server waited for its client
            text += f" {CLIENT_PACED}: this step's figures are partly the client's"
        seen.append(text)
    peak: int = max(step.queues, default=0)
    if peak:
        seen.append(f"up to {plural(peak, 'connection')} waited in an accept queue")
    return seen


def _overflows(step: RampStep, overflows: int, coordinated: bool) -> list[str]:
    """The accept queue's overflows: the server's own listeners' drops where read (ListenOverflows is the whole
    network namespace's: another program's listener overflowing beside a ramp at 100/s read 'the accept queue
    overflowed 154 times' of a server whose queue never held more than 2), else the namespace's counter."""
    own = None if coordinated else step.listener_drops
    if own:
        return [f"the accept queue overflowed: {listener_drops_said(own)}"]
    if own == 0 and overflows:
        return [f"ListenOverflows +{overflows} host-wide, none of them the server's (its listeners dropped none)"]
    if own is None and overflows:
        return [f"the accept queue overflowed {'once' if overflows == 1 else f'{overflows} times'}"]
    return []


def client_cpus(step: RampStep, kernel: str = "") -> float:
    """The load generator's CPU over the step on this machine's CPUs, in CPUs (its CPU per connection times
    connections finished); over client hosts (--clients), the drivers of those whose kernel is this one
    (`kernel`, the boot_id: localhost, a network namespace, a container), none of the others'."""
    if step.hosts:
        shared = [d.cpu_s for h in step.hosts if kernel and h.boot_id == kernel for d in h.drivers]
        return sum(shared) / max(step.wall_s, 1e-9)
    return (step.client_cpu_us or 0.0) * step.driven / 1e6 / max(step.wall_s, 1e-9)
