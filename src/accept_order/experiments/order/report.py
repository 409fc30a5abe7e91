"""Reports of sequential runs: the sequence, the per-worker table, the verdict; compare's table."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.text import Text

from ...core.measures import ConnectionRecord
from ...core.spec import DEFAULT_KIND
from ...render.evidence import evidence_report
from ...render.fit import key_columns
from ...render.text import durations_us, plural
from ...render.workers import worker_table
from ...servers.kind_notes import threads_note
from ..attached_listeners import v6only_note
from ..launch_notes import launch_parts
from ..sleeps_legend import ids_of, sleeps_legend
from .result import RunResult

if TYPE_CHECKING:
    from .serve_result import ServeResult

SEQUENCE_SHOWN = 60


def _answered_unnamed(result: RunResult, record: ConnectionRecord) -> bool:
    """A --target's connection answered with a reply naming no worker (a page of the server's own): the server
    served it, on no worker's row (run records it as an unexpected reply)."""
    from ..target_unanswered import answered_unnamed  # with the servers' registry: not at start-up (issue 30)

    return not record.served and answered_unnamed(result.server, record.error)


def sequence_text(result: RunResult, limit: int = SEQUENCE_SHOWN) -> str:
    """Serving worker per connection in driving order; `x` for a failed connection, `?` for one the server answered
    naming no worker."""
    marks = [str(r.worker) if r.served else "?" if _answered_unnamed(result, r) else "x" for r in result.records]
    shown = " ".join(marks[:limit])
    if len(marks) > limit:
        shown += f" … ({len(marks) - limit} more)"
    return shown


def errors_text(result: RunResult) -> Text | None:
    """The failed connections by error; apart, those a --target answered naming no worker, which it served (listed
    as failed, 'served nothing' of a plain nginx whose access log had every one)."""
    unnamed = Counter(r.error for r in result.records if _answered_unnamed(result, r))
    errors = Counter(r.error for r in result.records if not r.served and r.error not in unnamed)
    if not errors and not unnamed:
        return None
    text = Text()
    if errors:
        text.append(f"{sum(errors.values())} of {len(result.records)} connections failed:\n", style="bold red")
        for error, n in errors.most_common():
            text.append(f"  {n} × {error}\n")
    if unnamed:
        text.append(
            f"{sum(unnamed.values())} of {len(result.records)} connections answered, naming no worker ('?'):\n",
            style="bold yellow",
        )
        from ..target_unanswered import UNEXPECTED

        for error, n in unnamed.most_common():  # the reply itself: 'unexpected' it is not, of such a server
            text.append(f"  {n} × {(error or '').removeprefix(UNEXPECTED).strip()}\n")
    return text


def served_text(result: RunResult) -> Text:
    """What was served, failed and driven; a --target's replies naming no worker apart, neither failed nor on a row."""
    unnamed = sum(1 for r in result.records if _answered_unnamed(result, r))
    named = f"served {result.served}" + (" naming a worker" if unnamed else "")
    answered = f", answered naming none {unnamed}" if unnamed else ""
    return Text(f"{named}{answered}, failed {result.failed - unnamed}, driven {len(result.records)}")


def run_report(result: RunResult) -> RenderableType:
    server, env = result.server, result.environment
    head = Text.assemble(
        ("accept-order run", "bold"),
        f": mode {server.label}, {plural(server.workers, 'worker')}, {plural(len(result.records), 'connection')} "
        f"on {server.host}:{result.port} ({env.system} {env.kernel}, {env.cpu_count} CPUs)",
    )
    parts: list[RenderableType] = [
        head,
        Text.assemble(("Sequence: ", "bold"), sequence_text(result)),
        worker_table(result.counters, result.counts, detail=bool(server.cpus), ids=ids_of(server)),
        sleeps_legend(server, detail=bool(server.cpus)),
        served_text(result),
    ]
    if result.unsettled:
        parts.append(
            Text(
                f"Warning: {result.unsettled} connections started before every idle worker was back asleep "
                "(the machine is busy); the order may be blurred.",
                style="yellow",
            )
        )
    errors = errors_text(result)
    if errors:
        parts.append(errors)
    hint = why_nothing_served(result)
    if hint is not None:
        parts.append(hint)
    if (partly := partly_unnamed(result)) is not None:
        parts.append(partly)
    stopped = stopped_text(result)
    if stopped is not None:
        parts.append(stopped)
    v = result.verdict
    # nothing served is no fairness: Jain's index of all zeros is 1.000, 'perfectly fair'; nor is one process
    # serving with threads (an attached HAProxy): its threads' shares cannot be read
    threads = threads_note(result.evidence)
    said = f"not read per thread: {threads}" if threads else v.line() if result.served else v.pattern
    if not result.served and any(_answered_unnamed(result, r) for r in result.records):  # a file saved before
        from ..target_unanswered import UNNAMED_PATTERN  # session.py keeps it as the verdict's pattern

        said = UNNAMED_PATTERN  # not 'nothing served': the server answered them
    parts.append(Text.assemble(("Verdict: ", "bold green" if v.expected else "bold yellow"), said))
    parts.append(Text.assemble(("Why: ", "bold"), v.why))
    if not v.expected and v.model is not None:
        parts.append(Text(f"Note: mode {server.mode} was expected to show a different pattern.", style="yellow"))
    parts += launch_parts([server])
    parts += [note] if (note := v6only_note(result.evidence, server.host)) is not None else []
    agreement = witness_text(result)
    if agreement is not None:
        parts.append(agreement)
    attributed = accept_log_text(result)
    if attributed is not None:
        parts.append(attributed)
    if result.evidence:
        parts.append(evidence_report(result.evidence))
    return Group(*parts)


def why_nothing_served(result: RunResult) -> Text | None:
    """Why nothing was served by a server this tool did not start: the line client sends nothing and waits for
    the server to write, and a server that waits for a request first (HTTP: nginx) waits as long (every
    connection timed out; a refusal or a reset is something else); or a --target answered, but not naming
    the worker, which is all --target knows it by."""
    from ...servers.registry import KINDS
    from ..target_unanswered import run_unnamed

    server = result.server
    kind = KINDS.get(server.kind)
    if kind is None or kind.launched or result.served or not result.records:  # started by this tool: its own
        return None
    said = run_unnamed(server, Counter(r.error or "" for r in result.records))  # a stock nginx answers its page
    if said is not None:
        return Text(said[0].upper() + said[1:], style="yellow")
    if server.protocol != "line" or not all((r.error or "").startswith("timeout") for r in result.records):
        return None
    return Text(
        "No connection got an answer: with --protocol line (the default) the client sends nothing and waits for "
        "the server to write first; a server that waits for a request (HTTP: nginx, HAProxy, gunicorn, ...) "
        "needs --protocol http",
        style="yellow",
    )


def partly_unnamed(result: RunResult) -> Text | None:
    """A --target some of whose replies named no worker (a proxy in front of accept-order serve and a plain page):
    what the failures' list calls unexpected replies the server answered."""
    from ..target_unanswered import run_partly_unnamed

    failures = Counter(r.error or "" for r in result.records if not r.served)
    said = run_partly_unnamed(result.server, result.served, failures)
    return None if said is None else Text(said[0].upper() + said[1:], style="yellow")


def stopped_text(result: RunResult) -> Text | None:
    """Said when the run ended early: the records are what it got to."""
    if not result.interrupted:
        return None
    exit_ = result.evidence.get("worker_exit")
    why = str(exit_.get("why", "a worker exited")) if isinstance(exit_, dict) else "interrupted"
    return Text(f"Stopped early: {why}; these are the connections until then.", style="bold yellow")


def accept_log_text(result: RunResult) -> Text | None:
    """For a server that closes at once and may not name its workers: where the attribution came from."""
    log = result.evidence.get("accept_log")
    if not isinstance(log, dict):
        return None
    why = str(log.get("why", "?"))
    if log.get("available"):
        return Text(f"Replies that name no worker: attributed to the worker the kernel saw accept ({why})", style="dim")
    return Text(
        f"Replies that name no worker: the kernel's accepts could not be read ({why}), and the server closes "
        "each connection before the holder of its socket can be looked up, so those count as failed",
        style="yellow",
    )


def witness_text(result: RunResult) -> Text | None:
    """Does the server's own account (nginx's access log) name the same worker for every connection?"""
    witness = result.evidence.get("witness")
    if not isinstance(witness, dict) or not isinstance(witness.get("requests"), list):
        return None
    logged = [entry[0] for entry in witness["requests"] if isinstance(entry, list) and entry]
    served = [r for r in result.records if r.served]
    ours = [r.pid for r in served]
    source = str(witness.get("source", "the server's log"))
    if logged == ours:
        return Text(
            f"{source}: the same worker for each of the {len(ours)} served connections, in order", style="green"
        )
    # A server that logs after it has replied (uWSGI) may log two connections in the other order; the
    # client's port says which line is which connection.
    by_port = {e[1]: e[0] for e in witness["requests"] if isinstance(e, list) and len(e) == 2}
    if len(by_port) == len(logged) == len(ours) and all(by_port.get(r.client_port) == r.pid for r in served):
        return Text(
            f"{source}: the same worker for each of the {len(ours)} served connections (matched by client port)",
            style="green",
        )
    pairs = zip(logged, ours, strict=False)
    first = next((i for i, (a, b) in enumerate(pairs) if a != b), min(len(logged), len(ours)))
    return Text(
        f"{source} disagrees: it logged {len(logged)} requests, this run saw {len(ours)} served; "
        f"first difference at request {first}",
        style="bold yellow",
    )


def compare_table(results: Sequence[RunResult], skipped: dict[str, str]) -> RenderableType:
    from rich import box
    from rich.table import Table  # here: run's report has none, and rich.table's import is 5% of it (issue 30)

    table = Table(title="accept-order compare", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    # A server column only when a real server is in the table: built-in-only tables stay as they were.
    servers = any(r.server.kind != DEFAULT_KIND for r in results) or any(" " in k for k in skipped)
    # sleeps/conn: voluntary context switches per served connection (Verdict.woken_per_connection), not wakeups
    columns = (("server",) if servers else ()) + ("mode", "sequence", "served", "verdict", "Jain", "sleeps/conn")
    key_columns(table, 2 if servers else 1)  # a stacked part repeats what names the row
    for name in columns:
        table.add_column(name, no_wrap=name != "verdict", min_width=24 if name == "verdict" else None)
    for r in results:
        v = r.verdict
        sleeps = "-" if v.woken_per_connection is None else f"{v.woken_per_connection:.1f}"
        cells = [r.server.mode, sequence_text(r, 20), " ".join(map(str, r.counts)), v.pattern, f"{v.jain:.2f}", sleeps]
        table.add_row(*([r.server.kind] if servers else []), *cells)
    # a key names its server only where several were asked; else the server is the one every row ran on
    # ('compare --server nginx --modes epoll,blocking' called its blocking row builtin's, nginx's reason beside)
    only = results[0].server.kind if results else DEFAULT_KIND
    for key, reason in skipped.items():
        server, _, mode = key.rpartition(" ")
        cells2: list[str | Text] = [mode, "-", "-", Text(f"not available: {reason}", style="dim"), "-", "-"]
        table.add_row(*([server or only] if servers else []), *cells2)
    if not results:
        return table
    # What each verdict rests on (the client's CPU, the hash's odds, the chance of a fit): one line per row
    # that has figures, so the table's pattern stays short and the same across repeated runs.
    notes = [
        Text(f"- {r.server.label if servers else r.server.mode}: {r.verdict.seen}", style="dim")
        for r in results
        if r.verdict.seen
    ]
    if any(r.verdict.woken_per_connection is not None for r in results):
        notes.append(Text("sleeps/conn: the workers' voluntary context switches per served connection", style="dim"))
    first = results[0]
    env = first.environment
    # the most common count (of a tie, the larger); a server with its own (Caddy: one process) is named after it
    counts = [r.server.workers for r in results]
    workers = max(set(counts), key=lambda n: (counts.count(n), n))
    own = ", ".join(sorted({f"{r.server.kind} {r.server.workers}" for r in results if r.server.workers != workers}))
    work, gap = durations_us(first.server.work_us, first.load.gap_ms * 1000)  # one unit on the line
    note = Text(
        f"{plural(workers, 'worker')}{f' ({own})' if own else ''}, {plural(first.load.connections, 'connection')} "
        f"each, work {work}, gap {gap}; {env.system} {env.kernel}, {env.cpu_count} CPUs",
        style="dim",
    )
    return Group(table, *notes, note)


def _marks(sequence: Sequence[int], limit: int = SEQUENCE_SHOWN) -> str:
    shown = " ".join(map(str, sequence[:limit]))
    return shown + (f" … ({len(sequence) - limit} more)" if len(sequence) > limit else "")


def serve_report(result: ServeResult) -> RenderableType:
    """serve's tally: the sequence by accept time and what each worker counted (built-in workers), or, for
    a launched server, the sequence and the counts its own log (the witness) gives."""
    witness = result.evidence.get("witness")
    served = [result.sequence.count(c.index) for c in result.counters]
    accepted = [served[i] if c.accepts is None else c.accepts for i, c in enumerate(result.counters)]
    # A launched server counts nothing itself: without its log, who served what is not known (not 0 each).
    known = isinstance(witness, dict) or all(c.accepts is not None for c in result.counters)
    parts: list[RenderableType] = [
        Text.assemble(("Sequence: ", "bold"), _marks(result.sequence) or "(no connections)"),
        worker_table(result.counters, accepted if known else None, title="tally", ids=ids_of(result.server)),
        sleeps_legend(result.server),
    ]
    if isinstance(witness, dict):
        source = str(witness.get("source", "the server's log"))
        parts.append(
            Text(f"Sequence and served: from the {source}, in its order ({plural(len(result.sequence), 'request')})")
        )
    return Group(*parts)
