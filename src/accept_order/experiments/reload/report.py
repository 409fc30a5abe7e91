"""The reload table: per mode and way of going, what a steady load lost, with the kernel's counters."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ...core.cpus import format_cpu_list
from ...core.protocol import ABORTED, TIMEOUT
from ...render.evidence import PRIVATE_SHORT
from ...render.fit import key_columns
from ...render.stopped import stopped_early
from ...render.text import duration_us, durations_us, plural
from ..own_settings import caps_said
from .lost_wakeup import LOST_WAKEUP, lost_wakeup
from .result import GONE_TIMEOUT_S, MIGRATE, MIGRATE_FAILED, ReloadResult, ReloadRun

RELOAD_LEGEND = (
    "leave: the worker closes its listener, serves what it holds and exits (a graceful restart); kill: SIGKILL. "
    "migrate: net.ipv4.tcp_migrate_req in the run's private namespace (- : a shared queue, where it changes "
    "nothing). held: connections the killed worker had taken and not answered (≥: at least; exact only where an "
    "acceptor counted them). "
    "moved/not: TCPMigrateReqSuccess/Failure; drops: ListenDrops; abort: TCPAbortOnClose"
)


def failures_text(errors: dict[str, int]) -> str:
    if not errors:
        return "0"
    return ", ".join(f"{name} {n}" for name, n in sorted(errors.items(), key=lambda item: -item[1]))


def verdict_text(run: ReloadRun) -> Text:
    lost = run.failed
    expected = run.as_expected
    if run.interrupted:
        # the connections in flight when the run was stopped count as aborted: the stop's, not the worker's going
        stopped = run.errors.get(ABORTED, 0)
        under_way = f" ({stopped} under way when it was stopped)" if stopped else ""
        return Text(f"interrupted; lost {lost - stopped} so far{under_way}", style="yellow")
    if run.at_s is None:
        return Text("the load ended before the worker went", style="yellow")
    if run.gone_s is None:
        # which wait ran out, and (a leaving worker notices between connections) why nothing woke it. Only the load's
        # duration is known to be over: connections it started may still be under way (a kill then loses them), and
        # a SIGKILL needs no connection to act, so the reason is a leaving worker's alone
        waited = duration_us(GONE_TIMEOUT_S * 1e6)
        idle = ""
        if run.how == "leave" and _after_the_load(run):
            idle = ", once the load's duration was over: no new connection came to wake it"
        told = "it was told to leave" if run.how == "leave" else "its SIGKILL"
        return Text(f"worker {run.worker} had not gone {waited} after {told}{idle}; lost {lost}", style="yellow")
    if run.waited_past_timeout:  # the kernel promises nothing of how long a served queue keeps a connection
        return Text(f"lost {lost}: {run.errors.get(TIMEOUT, 0)} timed out in a served queue")
    if lost == 0:
        text = Text("nothing lost", style="green" if expected is not False else "yellow")
    else:
        text = Text(f"lost {lost}", style="green" if expected else ("yellow" if expected is False else ""))
    if expected is False:
        text.append(": not what the kernel promises", style="yellow")
    return text


def _after_the_load(run: ReloadRun) -> bool:
    """The worker was told to go once the load's duration was over (the run looks at the time every 100 ms: a
    --duration that short has its going after it)."""
    return run.at_s is not None and run.load.duration_s is not None and run.at_s >= run.load.duration_s


def went_text(runs: Sequence[ReloadRun], stopped: bool, at: str) -> str:
    """When the worker was told to go (`at`: the earliest, as the line's other durations are written), for a
    report's footer after 'worker N': `is told to leave after 500 ms` (leave), `is sent SIGKILL after 500 ms`
    (kill). The footer said 'goes after 100 ms' beside a verdict that it had not gone: this is when it was told,
    whether it went is the verdict's. `never` said with why (a stop, or the loads ending first); a telling
    after the load's end said as such."""
    told = _told({r.how for r in runs})
    if not any(r.at_s is not None for r in runs):
        never = told.replace("is ", "is never ", 1)
        return f"{never} (the run was stopped first)" if stopped else f"{never}: the load ended first"
    late = [r for r in runs if _after_the_load(r)]
    if not late:
        return f"{told} after {at}"
    every = "" if len(late) == len(runs) else f" in {len(late)} of {len(runs)} runs"
    return f"{told} after {at}, once the load's duration was over{every}"


def _told(hows: set[str]) -> str:
    """What was done to the worker, by how it was to go (the runs of a report may have both)."""
    said = {"leave": "told to leave", "kill": "sent SIGKILL"}
    if len(hows) == 1 and (how := next(iter(hows))) in said:
        return f"is {said[how]}"
    return "is told to leave (leave) or sent SIGKILL (kill)"


def earliest_going(runs: Sequence[ReloadRun]) -> float:
    """When the first worker of `runs` went, in µs to the tenth of a second (0: none went)."""
    return round(min([r.at_s for r in runs if r.at_s is not None] or [0]), 1) * 1e6


def _gave_up(runs: Sequence[ReloadRun]) -> str:
    """Which timeout a `timeout` in the failed column is: the clients' --timeout (not the wait for the worker)."""
    if not any(r.errors.get(TIMEOUT) for r in runs):
        return ""
    said = f"; timeout: a connection not answered within --timeout {duration_us(runs[0].load.timeout_s * 1e6)}"
    if any(r.waited_past_timeout for r in runs):
        said += (
            " ('timed out in a served queue': the others accepted after the kill, so the queue stayed and was served; "
            "how long a connection waits in it the kernel promises nothing of)"
        )
    return said


def run_name(run: ReloadRun) -> str:
    """Mode and how, and the migrate setting where a run has one (two reuseport runs differ only by it)."""
    return f"{run.server.mode} {run.how}" + (f" migrate={run.migrate}" if run.queue == "per-worker" else "")


def reload_table(result: ReloadResult) -> Table:
    table = Table(title="accept-order reload", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    key_columns(table, 3)  # mode, how and migrate together name a run: a stacked part repeats all three
    right = ("migrate", "driven", "served", "held", "moved/not", "drops", "abort")
    columns = ("mode", "how", "migrate", "driven", "served", "failed", "held", "moved/not", "drops", "abort", "verdict")
    for name in columns:
        table.add_column(name, justify="right" if name in right else "left", no_wrap=name in ("mode", "how"))
    for run in result.runs:
        c = run.counters
        table.add_row(
            run.server.mode,
            run.how,
            str(run.migrate) if run.queue == "per-worker" else "-",
            str(run.driven),
            str(sum(run.served)),
            failures_text(run.errors),
            "-" if run.held is None or run.how != "kill" else ("" if run.held_exact else "≥") + str(run.held),
            f"{c.get(MIGRATE, 0)}/{c.get(MIGRATE_FAILED, 0)}",
            str(c.get("TcpExtListenDrops", 0)),
            str(c.get("TcpExtTCPAbortOnClose", 0)),
            verdict_text(run),
        )
    for mode, reason in result.skipped.items():
        table.add_row(mode, *["-"] * (len(columns) - 2), Text(f"not available: {reason}", style="dim"))
    return table


def _end_queue(run: ReloadRun) -> int:
    """Connections waiting in the listeners' accept queues when the load ended (the evidence's last reading)."""
    listeners = run.evidence.get("listeners")
    end = listeners.get("end") if isinstance(listeners, dict) else None
    return sum(int(q) for row in end or () if isinstance(row, dict) and isinstance(q := row.get("queue"), int))


def unserved_queue(run: ReloadRun) -> str | None:
    """A kill after which a shared queue was left unserved: connections still queued at the load's end, and
    connections timed out. io-uring kill, 50 in flight: served 828/0/0, 50 timed out, the queue held 50 at the end
    (the other two workers' rings armed, never woken), which the row said only as 'lost 100: not what the kernel
    promises' beside a promise that the shared queue stays; io_uring's lost wakeup (lost_wakeup.py) is named where it
    can have lasted the rest of the run. When the stall began is read from the others' own accept counts after the
    killed worker was gone (others_after, looked at every 0.1 s): none after it is a stall from the kill, whatever
    they served before (the whole run's counts hid that, so such a stall went unnamed); some after it is not the
    kill's, and neither are whole-run counts of some from a file without that reading: more load than they could
    serve, the survivors short of CPU (epoll kill, -c 60, 2 ms work, --timeout 150ms on a busy machine: 292 queued,
    587 timed out, served 12/15), leaves the same queue and timeouts, so the line says that instead."""
    waiting, timed_out = _end_queue(run), run.errors.get(TIMEOUT, 0)
    if run.how != "kill" or run.queue != "shared" or run.passes or not waiting or not timed_out:
        return None
    others = [n for i, n in enumerate(run.served) if i != run.worker]
    said = f"{run_name(run)}: {plural(waiting, 'connection')} still waited in the listener's accept queue when the "
    said += f"load ended and {timed_out} timed out"
    per_worker = f"served per worker {'/'.join(map(str, run.served))}"
    who, they = ("the other worker", "it") if len(others) == 1 else ("the other workers", "they")
    after = run.others_after  # None: a file from before it was read, where the whole run's counts are all there is
    if others and (after == 0 or after is None and not any(others)):
        none = "in the whole run" if not any(others) else f"after it, {sum(others):,} before it"
        unserved = f"{who} left the shared queue unserved ({they} accepted none {none})"
        why = lost_wakeup(run)  # named only where it can have lasted the rest of the run
        return f"{said}: after worker {run.worker} was killed, {unserved}; {per_worker}" + (f". {why}" if why else "")
    if after is not None:
        until = (
            f"the last of them seen by {run.others_last_s:g} s into the load"
            if run.others_last_s is not None
            else "after the run's last look"
        )
        return (
            f"{said}; {who} accepted {after:,} after worker {run.worker} was gone ({until}, which ran "
            f"{duration_us((run.load.duration_s or 0) * 1e6)}), so the queue was not left from the kill: more load "
            f"than {they} could serve, or too little CPU, leaves the same queue and timeouts; {per_worker}"
        )
    return (
        f"{said}; {who} served {sum(others):,} over the whole run, so these counts do not tell a queue {they} "
        f"stopped serving after worker {run.worker} was killed from more load than {they} could serve; {per_worker}"
    )


def stalled_after_kill(run: ReloadRun) -> str | None:
    """A kill after which the others took the queue it left only past the clients' --timeout (their own counts, read
    at looks 0.1 s apart): 'reload --modes io-uring --how kill -w 3 -c 32 --work 1ms --timeout 150ms' timed out all
    32 clients in 2 of 4 runs, which b323155 called 'timed out in a served queue' (the others accepted 528 after it,
    once the clients' new connections woke them). Said only where a look after the going found they had accepted
    none: with none between it and their first move (a --timeout under the looks' 0.1 s, or a late look on a busy
    machine), the looks cannot tell a stall. io_uring's lost wakeup is named beside it for io-uring alone."""
    timed_out = run.errors.get(TIMEOUT, 0)
    if run.how != "kill" or run.queue != "shared" or run.passes or not timed_out or not run.stalled_past_timeout:
        return None
    first, still = run.since_gone(run.others_first_s), run.since_gone(run.others_still_s)
    if first is None or still is None:
        return None
    who = "the other worker's" if len(run.served) == 2 else "the other workers'"
    none, moved = duration_us(still * 1e6), duration_us(first * 1e6)
    said = (
        f"{run_name(run)}: {timed_out} timed out, and after worker {run.worker} was gone {who} own count had not "
        f"moved at a look {none} after it and first moved by a look {moved} after it, past the clients' --timeout "
        f"({duration_us(run.load.timeout_s * 1e6)}): the queue the kill left waited unserved at least {none}, and "
        f"may have until those timed out; served per worker {'/'.join(map(str, run.served))}"
    )
    if run.server.mode == "io-uring":
        said += f". {LOST_WAKEUP}: here a client's own, once its --timeout ran out"
    return said


def reload_report(result: ReloadResult) -> RenderableType:
    parts: list[RenderableType] = [reload_table(result), Text(RELOAD_LEGEND, style="dim")]
    if result.runs:
        first = result.runs[0]
        load = first.load
        # one unit on the line: when the worker went, how long the load ran, the work per connection
        at, ran, work = durations_us(earliest_going(result.runs), (load.duration_s or 0) * 1e6, first.server.work_us)
        # a Ctrl-C before it went: not a plan to keep it
        went = went_text(result.runs, any(r.interrupted for r in result.runs), at)
        env = first.environment
        pinned = f" (load generator on CPUs {format_cpu_list(load.cpus)})" if load.cpus else ""
        parts.append(
            Text(
                f"{plural(first.server.workers, 'worker')}, worker {first.worker} {went}; closed-loop "
                f"load of {load.concurrency} for {ran} per run{pinned}, work {work}"
                f"{caps_said([r.server for r in result.runs])}{_gave_up(result.runs)}; "
                f"{env.system} {env.kernel}, {plural(env.cpu_count, 'CPU')}; counters from a {PRIVATE_SHORT}"
            )
        )
    cpu = [f"{run_name(r)} {r.client_cpu_us:.0f}" for r in result.runs if r.client_cpu_us is not None]
    if cpu:
        loops = " and ".join(sorted({r.loop for r in result.runs if r.loop}))
        on = f", on {loops}" if loops else ""
        parts.append(Text(f"load generator CPU per connection (µs{on}): {', '.join(cpu)}", style="dim"))
    why: dict[str, str] = {}
    for run in result.runs:
        key = f"{run.how}, {'shared queue' if run.queue == 'shared' else f'tcp_migrate_req={run.migrate}'}"
        if run.passes:
            key = f"{run.how}, fd-pass"
        why.setdefault(key, run.expected.why)
    if why:
        parts.append(Text("What the kernel promises", style="bold"))
        parts += [Text(f"  {key}: {text}") for key, text in why.items()]
    stalls = [stalled_after_kill(run) or unserved_queue(run) for run in result.runs]
    parts += [Text(said, style="yellow") for said in stalls if said is not None]
    if result.host_migrate_req is not None:
        parts.append(
            Text(f"The host's net.ipv4.tcp_migrate_req ({result.host_migrate_req}) was not changed.", style="dim")
        )
    if result.interrupted:  # the variants after the one it cut have no row: missing, not empty
        parts.append(stopped_early([run_name(r) for r in result.runs if r.interrupted]))
    return Group(*parts)
