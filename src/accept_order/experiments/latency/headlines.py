"""The first line of a latency report: the server (mode, workers, pinning, cap), the work per connection and the
load (connections or time, concurrency or rate, the load generator's processes), and the machine."""

from __future__ import annotations

from rich.text import Text

from ...core.cpus import format_cpu_list
from ...core.measures import Environment
from ...core.spec import ConcurrentLoad, ServerSpec
from ...render.hosts import on_hosts
from ...render.text import durations_us, plural
from ...servers.registry import known_by_replies, known_mode
from .kept_load_words import kept_amount, kept_words
from .result import LatencyResult


def _work_and_load(plan: ServerSpec, estimate_us: float | None, load: ConcurrentLoad) -> tuple[str, str]:
    """The work per connection and the load, for one line: its durations (the work, its cost here, how long
    the load ran) in one unit."""
    values = {
        "work": plan.work_us or None,
        "cost": round(estimate_us) if plan.work_iters and estimate_us else None,
        "ran": (load.duration_s or 0) * 1e6 if load.connections is None else None,
    }
    given = {name: value for name, value in values.items() if value is not None}
    shown = dict(zip(given, durations_us(*given.values()), strict=True))
    parts = [shown["work"]] if "work" in shown else []
    if plan.work_iters:
        cost = f" ≈ {shown['cost']} here" if "cost" in shown else ""
        parts.append(f"{plan.work_iters} loop iterations{cost}")
    work = "work " + (" + ".join(parts) + " busy loop" if parts else "none")
    if plan.attach or known_by_replies(plan):  # a server this tool did not start: what it does is not ours to say
        work = "the server's own work"
    amount = kept_amount(load) if load.connections is not None else shown["ran"]
    procs = f"{load.driver_procs} driver processes" + (f" on CPUs {format_cpu_list(load.cpus)}" if load.cpus else "")
    procs += on_hosts(load.clients)
    if load.rate is not None:
        kept = kept_words(load) if load.connections is None else ""  # with a count, kept_amount says it
        return work, f"open loop at {load.rate:g}/s, {amount}{kept}, at most {load.concurrency} in flight, {procs}"
    return work, f"{amount}, {load.concurrency} concurrent{kept_words(load)}, {procs}"


def _env_text(env: Environment) -> str:
    return f"{env.system} {env.kernel}, {env.cpu_count} CPUs"


def group_headline(command: str, first: LatencyResult, mode: str, caps: str = "") -> Text:
    """The first line of a report over several runs that share everything but what they vary (`caps`: their cap)."""
    server = first.server
    work, load = _work_and_load(server, first.work_estimate_us, first.load)
    return Text.assemble(
        (command, "bold"),
        f": {mode}{plural(server.workers, 'worker')}, {work}{caps}; {load} ({_env_text(first.environment)})",
    )


def headline(result: LatencyResult) -> Text:
    server, env = result.server, result.environment
    # the cap where the mode reads it: a file of before 87222a4 may hold one its mode never read (io-uring's)
    read = (mode := known_mode(server.kind, server.mode)) is None or mode.batches
    batch = f", accept-batch {server.accept_batch}" if server.accept_batch and read else ""
    pinned = f", pinned to CPUs {format_cpu_list(server.cpus)}" if server.cpus else ""
    work, load = _work_and_load(server, result.work_estimate_us, result.load)
    threads = result.evidence.get("threads")
    count = threads.get("count") if isinstance(threads, dict) else None
    of = f" of {count} threads" if isinstance(count, int) and count > 1 and server.workers == 1 else ""
    return Text.assemble(
        ("accept-order latency", "bold"),
        f": mode {server.label}, {plural(server.workers, 'worker')}{of}{pinned}, "
        f"{work}{batch}; {load}; "
        f"{server.host}:{result.port} ({_env_text(env)})",
    )
