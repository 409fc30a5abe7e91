"""The ramp table: one row per step of offered load, then the knee and why."""

from __future__ import annotations

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ...analysis.fairness import jain_index
from ...analysis.kept_counts import filled_in
from ...core.cgroup_cpu import throttle_sentence
from ...core.cpus import format_cpu_list
from ...core.hosts import ClientHosts
from ...core.text import escape_controls
from ...render.evidence import short_counter, shortage_lines
from ...render.hosts import HostsPart, host_parts, on_hosts
from ...render.observed_on import brought, load_parts
from ...render.text import durations_us, plural
from ...render.workers import own_count_text
from ...servers.registry import known_by_replies, unseen_note
from ..generator_pace import GENERATOR_PACED
from ..launch_notes import launch_parts
from ..own_settings import caps_said, own_settings
from ..target_unanswered import target_unanswered_note, unnamed_note
from .held_tail import tail_unjudged
from .machine_share import others_at_break
from .result import RampResult, RampStep
from .step_verdict import CLIENT_PACED
from .unstarted import unstarted_line

SHOWN_COUNTERS = (
    "TcpExtListenOverflows",
    "TcpExtListenDrops",
    "TcpExtSyncookiesSent",
    "TcpExtTCPAbortOnData",
    "TcpExtTCPAbortOnClose",
    "TcpEstabResets",
    "TcpAttemptFails",
    "TcpRetransSegs",
)


def work_and_step(work_us: float, step_s: object) -> tuple[str, str]:
    """The work per connection and the step's length, in one unit (`? s` for a file without the step)."""
    if not isinstance(step_s, int | float):
        return durations_us(work_us)[0], "? s"
    work, step = durations_us(work_us, step_s * 1e6)
    return work, step


def _ms(us: int | None) -> str:
    return "-" if us is None else f"{us / 1000:.2f}"


def _offered(step: RampStep) -> str:
    return f"{step.offered:g}/s" if step.kind == "rate" else f"{step.offered:g} in flight"


def served_less(result: RampResult) -> str | None:
    """Where the last step served less than half of what an earlier one did: more load served less, which a
    step's hold (nothing failed, a tail under --p99/--p999 where given) does not see. `ramp --server haproxy
    --pool --concurrency-steps 4,16` here: 98/s at 4 in flight, 19/s at 16, both 'held', and the report said 'the
    breaking point is further out'. 'As past a breaking point' only where the workers were busier at the last
    step: that run's were not (9% of their 2 CPUs at each, the host's 100% busy), and its 1 s
    step lasted 4.1 s for one request of 3.9 s (review RF). None otherwise."""
    steps = [s for s in result.steps if not s.cut_short]
    if len(steps) < 2:
        return None
    best, last = max(steps[:-1], key=lambda s: s.throughput), steps[-1]
    if not last.throughput < best.throughput / 2:
        return None
    said = (
        f"but {_offered(last)} got {last.throughput:.0f}/s, less than half the {best.throughput:.0f}/s of "
        f"{_offered(best)}: more load was served less"
    )
    if last.worker_cpu and best.worker_cpu and sum(last.worker_cpu) <= sum(best.worker_cpu):
        usable = usable_cpus(result)
        said += (
            f", though its workers were no busier ({workers_cpu(last, usable)} of their CPUs, "
            f"{workers_cpu(best, usable)} at {_offered(best)})"
        )
        if last.machine_cpu is not None and last.machine_cpu >= BUSY_HOST:
            said += f" and the host's CPUs were {last.machine_cpu:.0%} busy"
    else:
        said += ", as past a breaking point"
    step_s = result.plan.get("step_s")
    if last.max_us is not None and isinstance(step_s, int | float) and last.max_us / 1e6 > step_s:
        said += f"; its slowest request took {last.max_us / 1e6:.1f} s, longer than the {step_s:g} s step"
    limits = "" if result.plan.get("p99_ms") or result.plan.get("p999_ms") else "; no --p99 or --p999 was given"
    return f"{said} (a step holds where nothing failed{limits})"


BUSY_HOST = 0.9  # the host's CPUs this busy over a step: others' work can slow the load (said beside it)


def usable_cpus(result: RampResult) -> int:
    """The CPUs the workers could use at once: one each, at most the machine's."""
    workers = max(result.server.workers, 1)
    return min(workers, result.environment.cpu_count) if result.environment else workers


def workers_cpu(step: RampStep, usable: int) -> str:
    """The workers' CPU over the step as a share of the CPUs they could use (the 'seen' line's figure)."""
    return f"{100 * sum(step.worker_cpu) / usable:.0f}%" if step.worker_cpu else "-"


def coordinated(result: RampResult) -> bool:
    """The load went from client hosts to a server elsewhere (--clients with --target): this host only
    coordinated, and its counters, sockets and CPUs are none of the run's."""
    here = any(s.through_here for s in result.steps)  # its address was this host's: the server is here
    return known_by_replies(result.server) and any(s.hosts for s in result.steps) and not here


def overflows(step: RampStep, elsewhere: bool) -> int | None:
    """The step's listen overflows: the server's own listeners' drops where read, else this host's ListenOverflows,
    or, where it only coordinated, the server's as --observe-on read them in its network namespace (None without it).
    The table's column and --repeat's CSV rows alike."""
    if not elsewhere and step.listener_drops is not None:  # the server's own listeners' count (run._overflows)
        return step.listener_drops
    # a server elsewhere driven from here: this host's counters were the client's, not kept (run._counters_reader)
    counters = step.server_counters if elsewhere or step.server_unread else step.counters
    return None if counters is None else counters.get("TcpExtListenOverflows", 0)


def _overflows(step: RampStep, elsewhere: bool) -> str:
    said = overflows(step, elsewhere)
    return "-" if said is None else str(said)


def ramp_table(result: RampResult, title: str | None = "accept-order ramp") -> Table:
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    usable = usable_cpus(result)
    elsewhere = coordinated(result)
    right = ("got/s", "p50 ms", "p99 ms", "p99.9 ms", "failed", "overflows", "max Recv-Q", "workers CPU", "host CPUs")
    for name in ("offered", *right, "step"):
        table.add_column(name, justify="right" if name in right or name == "offered" else "left")
    for step in result.steps:
        verdict = Text("held", style="green") if step.held else Text("; ".join(step.reasons) or "interrupted")
        if not step.held:
            verdict.stylize("yellow")
        table.add_row(
            _offered(step),
            f"{step.throughput:.0f}",
            _ms(step.p50_us),
            _ms(step.p99_us),
            _ms(step.p999_us),
            str(step.failed - step.under_way),  # the stop's are said under the table
            _overflows(step, elsewhere),
            str(max(step.queues)) if step.queues else "-",
            workers_cpu(step, usable),
            "-" if step.machine_cpu is None or elsewhere else f"{100 * step.machine_cpu:.0f}%",
            verdict,
        )
    return table


def _unnamed_of(step: RampStep) -> str:
    """How many of a step's replies named no worker: 'no reply named a worker' was said of a step half of whose
    replies named one (a page answering 'worker PID' on some connections, 'hello' on others)."""
    if not any(step.served):
        return "no reply named a worker"
    return f"{step.unnamed:,} of the {step.ok:,} replies named no worker"


def _kept_line(step: RampStep) -> Text | None:
    """Over kept connections: the requests each worker answered (the replies' count), Jain's index over them,
    the connections each accepted, and how much of a pool opened."""
    if not step.connections:
        return None
    requests = " ".join(map(str, step.served))
    text = (
        f"    requests per worker: {requests} (Jain {jain_index(step.served):.3f}) over connections accepted "
        f"{' '.join(map(str, step.connections))}"
        if not step.unnamed
        else f"    requests per worker: not known ({_unnamed_of(step)})"  # nor the connections each accepted
    )
    if step.pool is not None:
        opened, planned = step.pool
        text += (
            f"; pool: {opened} of {planned} opened and answered{filled_in(step.pool_fill_s)} before the step's requests"
        )
    return Text(text)


def _own_count(result: RampResult) -> Text | None:
    """The requests each worker says it answered over all the steps, beside the replies' count."""
    if not result.worker_requests:
        return None
    parts = [(s.served, s.errors) for s in result.steps]
    return own_count_text(result.worker_requests, parts, "the steps")


def kept_words(plan: dict[str, object]) -> str:
    """How a ramp's connections were kept, for its description line ('' for one request each)."""
    per, pool = plan.get("requests_per_connection", 1), bool(plan.get("pool"))
    if per == 1 and not pool:
        return ""
    each = "each connection kept for the whole step" if per == 0 else f"{per} requests per connection"
    rates = "; rates in requests per second" if plan.get("rates") else ""
    return f", {each}" + (", opened as a pool at each step's start" if pool else "") + rates


def _step_lines(step: RampStep) -> list[Text]:
    sockets = ", ".join(f"{k} {v}" for k, v in step.sockets.items() if k != "total")
    moved = ", ".join(f"{short_counter(n)} {step.counters[n]:+d}" for n in SHOWN_COUNTERS if step.counters.get(n))
    lines = [Text(f"  {_offered(step)}: sockets at the end: {sockets or 'unknown'}")]
    # 'no drops' would be the client's (a server elsewhere), or nobody's (its namespace's processes gone)
    unread = "not read in the server's network namespace" if step.server_unread else None
    lines.append(Text(f"    counters: {moved or unread or 'no drops, resets or retransmissions'}"))
    if step.worker_cpu:
        each = ", ".join(f"worker {i} {100 * c:.0f}%" for i, c in enumerate(step.worker_cpu))
        lines.append(Text(f"    CPU per worker (of one CPU): {each}"))
    kept = _kept_line(step)
    if kept is not None:
        lines.append(kept)
    if step.client_cpu_us is not None:  # the drivers count each request over kept connections
        busiest = f", busiest process {100 * step.driver_cpu:.0f}% of a CPU"
        unit = "request" if step.connections else "connection"
        on = f" on {step.loop}" if step.loop else ""
        lines.append(Text(f"    load generator{on}: {step.client_cpu_us:.0f} CPU-µs per {unit}{busiest}"))
    if step.seen:
        lines.append(Text(f"    seen: {'; '.join(step.seen)}"))
    return lines


def _whose(result: RampResult) -> str:
    """Whose host the per-step sockets and counters describe: this one's, which is the server's or the load's
    or, with client hosts driving a server elsewhere, neither."""
    if coordinated(result):
        observed = any(s.server_counters is not None for s in result.steps)
        left = (
            "the table's overflows are the server's network namespace's, as --observe-on read them there (all its "
            "listeners'), and its host CPUs, this host's, are left out ('-')"
            if observed
            else "the table leaves its overflows and host CPUs out ('-')"
        )
        return (
            "both of this host, which only coordinated (the load went from the client hosts to the server): none "
            f"of the run's connections crossed it; {left}"
        )
    if any(s.hosts for s in result.steps):
        return "both host-wide, of this host: the server's (the load came from the client hosts)"
    if any(s.server_unread for s in result.steps):
        observed = any(s.server_counters is not None for s in result.steps)
        return (
            "the sockets this host's, the client's; the kernel counters not read in the server's network namespace "
            "(the server elsewhere, its namespace's processes gone, or its connections landing in none of this "
            "machine's namespaces that the tool sees: its address in several, or DNATed), "
            "and this host's are the client's"
            + ("; the table's overflows are --observe-on's, read in the server's network namespace" if observed else "")
        )
    landed = f"; {result.counters_landed}" if result.counters_landed else ""  # and one more connection made
    if any(s.counters_netns for s in result.steps):
        return (
            "the sockets this host's, the client's; the kernel counters the server's network namespace's (another of "
            f"this machine's), read through its processes{landed}"
        )
    return f"both host-wide{landed}"


def _knee_sure(result: RampResult, held: RampStep | None, broke: RampStep) -> str:
    """How sure one ramp's knee is: one run, bounded by the steps' spacing, and whose break it was where the step
    that did not hold says the load generator set its pace, or other processes held more of the CPUs than the run
    (as ramp --modes' verdict says of a mode): 'ramp --rates 2000,40000 --driver-procs 1 -w 4' here broke at 40000/s
    with other processes using 52% of the CPUs and the run 45%, its workers on a CPU 23% of the step, and read 'it
    lies between 2000/s and 40000/s' alone, a breaking point of the server's."""
    lies = f"between {_offered(held)} and {_offered(broke)}" if held else f"at or below {_offered(broke)}"
    sure = f"How sure: one run, to the steps' spacing: it lies {lies}"  # the spacing bounds it as much as the run
    if any(CLIENT_PACED in seen for seen in broke.seen):
        sure += f", where {GENERATOR_PACED} (There): the server's own may lie further out"
    elif said := throttle_sentence(broke.throttled_ms or 0.0, broke.wall_s, broke.cpu_limit or ""):
        sure += f", where {said}: that break may be the limit's, not the server's"
    elif (shares := others_at_break(result)) is not None:
        others, own = shares
        sure += (
            f", where other processes used {100 * others:.0f}% of the CPUs (this run's own {100 * own:.0f}%): that "
            "break may be the machine's, not the server's"
        )
    return f"{sure}; --repeat 3 says how often it does"


def ramp_report(result: RampResult) -> RenderableType:
    parts: list[RenderableType] = [ramp_table(result)]
    held, broke = result.knee
    cut = next((s for s in result.steps if s.cut_short), None) if broke is None else None
    if cut is not None:  # Ctrl-C stopped a step before it could hold or not: no knee either way
        before = f"every step that finished held, up to {_offered(held)}" if held else "no step finished"
        parts.append(Text(f"Interrupted at {_offered(cut)} before that step could tell: {before}.", style="bold"))
    elif result.cut_short and held is not None:  # Ctrl-C between two steps: the ones after it never ran
        parts.append(
            Text(f"Interrupted after {_offered(held)}: every step run held; the later ones were not run.", style="bold")
        )
    elif broke is None and held is not None and result.stopped:  # the steps it did not run might not have held
        parts.append(Text(f"Every step run held, up to {_offered(held)}; then an error stopped the ramp (below)."))
    elif broke is None and held is not None and (fell := served_less(result)) is not None:
        parts.append(Text(f"Every step held, up to {_offered(held)}, {fell}.", style="yellow"))
    elif broke is None and held is not None:
        further = f"Every step held, up to {_offered(held)}: the breaking point is further out"
        if (rose := tail_unjudged(result)) is not None:  # held by failures and rate alone, the tail grown
            further = f"Every step held, up to {_offered(held)} {rose}"
        sure = "How sure: one run; --repeat 3 says how often every step holds"  # a busy machine moves it
        parts.append(Text(f"{further}. {sure}", style="green"))
    elif broke is not None:
        before = f"the last step that held was {_offered(held)}" if held else "no step held"
        why = "; ".join(broke.reasons) or "interrupted"
        sure = _knee_sure(result, held, broke)
        parts.append(Text(f"Knee: {before}; the first that did not was {_offered(broke)}: {why}. {sure}", style="bold"))
        if broke.seen:
            parts.append(Text(f"  There: {'; '.join(broke.seen)}."))
    for step in (s for s in result.steps if s.under_way):  # counted as aborted by the load; its row leaves them out
        stop = f"{plural(step.under_way, 'connection', grouped=True)} under way at the stop"
        parts.append(Text(f"  {_offered(step)}: {stop} (aborted by it: neither failed nor served)", style="yellow"))
    parts += [Text(line, style="yellow")] if (line := unstarted_line(result)) is not None else []
    unnamed = target_unanswered_note(result.server, ((s.ok, s.errors) for s in result.steps))  # unnamed: served
    parts += [unnamed] if unnamed is not None else []
    parts += [said] if (said := unnamed_note(result.server, ((s.unnamed, s.ok) for s in result.steps))) else []
    server = result.server
    env = result.environment
    where = f"; {env.system} {env.kernel}, {plural(env.cpu_count, 'CPU')}" if env else ""
    plan = result.plan
    timed = "request" if kept_words(plan) else "connection"
    loop = f"open loop (each {timed} timed from when it was due)" if plan.get("rates") else "closed loop"
    loop += kept_words(plan)
    if plan.get("load_cpus"):
        loop += f", load generator on CPUs {format_cpu_list(plan['load_cpus'])}"
    if isinstance(plan.get("client_hosts"), dict):
        loop += f", load generator{on_hosts(ClientHosts.from_dict(plan['client_hosts']))}"
    work, step_length = work_and_step(server.work_us, plan.get("step_s"))
    parts.append(
        Text(
            f"{server.label}, {plural(server.workers, 'worker')}{own_settings(server, work)}{caps_said([server])}; "
            f"{loop}, {step_length} per step{where}",
            style="dim",
        )
    )
    if any(s.worker_cpu for s in result.steps):  # a server elsewhere's CPU is not seen: its column is all '-'
        parts.append(
            Text(
                f"workers CPU: the workers' CPU time over the step, as a share of the "
                f"{plural(usable_cpus(result), 'CPU')} they could use (one each); per worker below",
                style="dim",
            )
        )
    observed = any(brought(s.observed_on) for s in result.steps)
    parts += [Text(note, style="yellow")] if (note := unseen_note(server, observed)) else []
    parts += launch_parts([server])
    parts.append(Text(f"Per step: socket summary (ss -s) and counter deltas (nstat), {_whose(result)}", style="bold"))
    for step in result.steps:
        parts += _step_lines(step)
    parts += [own] if (own := _own_count(result)) is not None else []
    steps = [
        HostsPart(_offered(s), s.hosts, s.wall_s, s.offered if s.kind == "rate" else None, s.interrupted)
        for s in result.steps
    ]
    parts += host_parts(steps, "step")
    for step in result.steps:  # --observe-on: what observe saw on the server's host during each step
        parts += load_parts(step.observed_on, _offered(step))
    parts += shortage_lines(list(result.shortages))
    if result.stopped:
        kept = (
            f"kept: what was measured before it ({plural(len(result.steps), 'step')}); the steps after it were not run"
        )
        parts.append(Text(f"Stopped early: {escape_controls(result.stopped)}; {kept}.", style="yellow"))
    return Group(*parts)
