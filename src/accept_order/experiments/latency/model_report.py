"""The Model table printed after a latency table: each run's predicted and measured p50, p99, p99.9 and
deviation (experiments/latency/model_check.py), its service time's source, and one line saying whether queueing
alone explains what was measured (model_verdict.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from rich.console import RenderableType
from rich.text import Text

from ...analysis.busy_choice import MIN_BUSY_LOOKS, SLEPT_SERVING, choose
from ...analysis.model_check import SOURCES, ModelCheck
from ...core.histogram import LatencyHistogram
from ...render.service_mean import service_mean
from ...render.text import Verbatim, plural
from ...results import export
from .kept_load_words import finished_unit
from .model_check import working
from .model_verdict import judged, model_line, predicted_ms
from .result import LatencyResult

# (column, the model's figure, the measured percentile or None for the deviation)
COLUMNS: tuple[tuple[str, str, float | None], ...] = (
    ("p50", "p50_ms", 50.0),
    ("p99", "p99_ms", 99.0),
    ("p99.9", "p999_ms", 99.9),
    ("dev", "dev_ms", None),
)
CELL = 11  # "12.34/56.78": three significant figures keep four cells and a label within 80 columns
NOTE = (
    "queue: shared = one queue, idle workers in turn; favoured = one queue, the lowest idle worker first; "
    "holder = one queue, an accept lock's holder first, the others when they try the lock while its holder "
    "serves (back from serving, or their retry delay up); "
    "hash = a queue per worker, chosen at random; round-robin = connection k to worker k mod N; (n): "
    "connections a worker takes from the shared queue at once (all: until none is left)"
)
# said beside a holder model that recorded its hold (ModelCheck.hold_us): a fitted constant, not something the run
# measured (analysis/lock_holder.py)
HOLDER_NOTE = (
    "; holder: the lock held a random while on each connection taken, mean {hold:g} µs out of its service time "
    "(fitted to nginx's accept_mutex on one machine, not measured), in which a worker back from serving finds it taken"
)
RHO_NOTE = "; ρ: the open loop's rate × mean service time / workers (1 or more: more than the workers can serve)"
# a pinned model's ρ is not over all the workers (ModelCheck.utilisation)
PINNED_RHO = "; its ρ the busiest worker's, fed its connections' share of the rate"
PINNED_NOTE = "; pinned = each request queued at the worker that holds its connection (connections held per worker: "
# said only beside a model that queues at the first worker alone (io-uring), so other runs' notes stay as they were
FIRST_NOTE = (
    "; first = every connection queued at the first armed worker, idle or busy, until its ring's completions are "
    "full: then at the next, woken by the next connection to arrive (those that arrived with the one that filled it "
    "wake nobody: that wakeup's accept, or the first's arming again, takes them)"
)
REACH_NOTE = "the workers the client's CPUs reach, a listener per CPU, are the model's"
WORKING_NOTE = "no worker's served count is known: those that used CPU are the model's, the others served none"
CHURN = "; connections of K > 1 requests come and go: those held when the load ended, scaled to its clients"


def _holder_note(runs: Sequence[LatencyResult]) -> str:
    """HOLDER_NOTE with the hold the holder models recorded (their first: one constant); none in files before it."""
    holds = [r.model.hold_us for r in runs if r.model is not None and r.model.hold_us is not None]
    return HOLDER_NOTE.format(hold=holds[0]) if holds else ""


def _reach_note(runs: Sequence[LatencyResult], label: Callable[[LatencyResult], str]) -> str:
    """Beside a model of fewer workers than its run had: a mode steered by the client's CPU reaches only the
    listeners of the CPUs the load generator ran on (model_check.reached); where no worker's served count is known,
    the workers that used no CPU served none (model_check.working)."""
    fewer = [(r, r.model.workers) for r in runs if r.model is not None and r.model.workers < r.server.workers]
    said = ""
    for idle, note in ((False, REACH_NOTE), (True, WORKING_NOTE)):
        named = [f"{label(r)} {n} of {r.server.workers}" for r, n in fewer if (working(r) is not None) == idle]
        said += f"; {note} ({', '.join(named)})" if named else ""
    return said


def _pinned_note(runs: Sequence[LatencyResult], label: Callable[[LatencyResult], str]) -> str:
    """Said only beside a pinned model (runs of one request per connection keep their note as it was)."""
    held = [(label(r), r.model.connections) for r in runs if r.model is not None and r.model.discipline == "pinned"]
    if not held:
        return ""
    each = "; ".join(("" if len(held) == 1 else f"{name} ") + "/".join(map(str, counts)) for name, counts in held)
    pinned = [r for r in runs if r.model is not None and r.model.discipline == "pinned"]
    open_loop = any(r.model.utilisation is not None for r in pinned if r.model)
    # K > 1: the table's 'held at end' is the snapshot the model scaled (held_connections), not these counts
    churn = any(r.load.requests_per_connection > 1 for r in pinned)
    return PINNED_NOTE + each + (CHURN if churn else "") + ")" + (PINNED_RHO if open_loop else "")


def _ms(value: float) -> str:
    if value < 0.1:  # tens of µs: two decimals would read 0.00
        return f"{value:.3f}"
    return f"{value:.2f}" if value < 10 else f"{value:.1f}" if value < 100 else f"{value:.0f}"


def _cell(predicted: float, measured: float) -> str:
    return f"{_ms(predicted)}/{_ms(measured)}"


def model_table_lines(results: Sequence[LatencyResult], label: Callable[[LatencyResult], str]) -> list[str]:
    """Fixed-width rows, one per run with a model: `predicted/measured` in ms, the prediction the sentence judges
    (with the fixed path every connection takes)."""
    runs = [r for r in results if r.model is not None and r.ok]
    _, fixed = judged(runs)
    width = max([len("run"), *(len(label(r)) for r in runs)])
    queue = max([len("queue"), *(len(r.model.queue) for r in runs if r.model is not None)])
    head = f"{'run':<{width}} {'queue':<{queue}}" + "".join(f"{name:>{CELL + 1}}" for name, _, _ in COLUMNS)
    lines = [head, "-" * len(head)]
    for r in runs:
        m = r.model
        assert m is not None
        cells = []
        for _, key, q in COLUMNS:
            measured = r.histogram.percentile(q) / 1000 if q is not None else r.histogram.stdev_us / 1000
            cells.append(f" {_cell(predicted_ms(m, key, fixed), measured):>{CELL}}")
        lines.append(f"{label(r):<{width}} {m.queue:<{queue}}" + "".join(cells))
    return lines


def _service_text(r: LatencyResult, label: Callable[[LatencyResult], str]) -> str:
    m = r.model
    assert m is not None
    unit = finished_unit(r.load)  # a request over kept connections: the workers timed (or used CPU on) each
    count = f", {plural(m.service_count, unit)}" if m.service_count else ""
    timed = [(c.service_sum_us, sum(k for _, k in c.service_us)) for c in r.counters if c.service_sum_us is not None]
    each = [total / n for total, n in timed if n]  # a worker whose every time read 0 is among them
    mean = service_mean(m.service_mean_ms * 1000, each, rounded_down=m.service_source == "server")
    rho = "" if m.utilisation is None else f"; ρ {m.utilisation:.2f}"
    source = SOURCES[m.service_source].replace("per connection", f"per {unit}")
    if m.cpu_share is not None and m.cpu_share < 1:  # the CPU it got while runnable (probes/cpu_waits.py)
        source += f" over the {m.cpu_share:.0%} of a CPU its threads got while runnable"
    if m.busy_waited is not None:  # why not their CPU (model_check.slept_serving)
        cpu = "" if m.cpu_mean_ms is None else f" (mean {_ms(m.cpu_mean_ms)} ms)"
        source += (
            f": {m.busy_waited:.0%} of it asleep off the CPU while serving, in {m.waited_in or 'other calls'} (waiting "
            f"for something: a database, an upstream, the client; the calls do not say which), which their CPU per "
            f"{unit}{cpu} leaves out"
        )
    if m.service_gaps:  # each connection's own time, not one mean (model_check.served_between_accepts)
        source += (
            f"; each {unit}'s drawn from the {m.service_gaps:,} gaps the kernel timed between a worker's accept and "
            "its next accept call, a worker that serves one at a time serving one in each"
        )
    return f"{label(r)}: {source} ({mean}{count}){rho}{choice_text(m)}"


def choice_text(m: ModelCheck) -> str:
    """Why the busy-time looks chose the source they did, and how surely (analysis/busy_choice.py); '' where the
    workers were not looked at (and files before it)."""
    if m.busy_looks is None or m.slept_looks is None or m.slept_share is None:
        return ""
    choice = choose(m.busy_looks, m.slept_looks, m.slept_share)
    low, high = choice.interval
    taken = "their busy time" if m.service_source == "busy" else "their CPU"
    other = "their CPU" if m.service_source == "busy" else "their busy time"
    if not choice.enough:
        return (
            f"; {taken} taken, not surely: the looks at their calls found the workers busy "
            f"{plural(choice.looks, 'time')}, "
            f"under the {MIN_BUSY_LOOKS} a busy time per connection needs (its error about 1/√looks), so whether "
            "they slept while serving was not read (a longer run tells)"
        )
    said = (
        f"; {taken} taken: {choice.slept:,} of the {choice.looks:,} busy looks found them asleep "
        f"({choice.share:.0%} of the busy time, {low:.0%}-{high:.0%} at 95% confidence), "
    )
    side = "at or over" if m.service_source == "busy" else "under"
    if choice.sure:
        return said + f"{side} the {SLEPT_SERVING:.0%} that decides"
    return said + f"either side of the {SLEPT_SERVING:.0%} that decides: not sure, another run may take {other}"


def _load_text(r: LatencyResult) -> str:
    m = r.model
    assert m is not None
    if m.loop == "closed-loop":
        return f"{plural(m.concurrency, 'client')} (closed loop)"
    return f"{m.rate:g}/s (open loop)"


def model_report(
    results: Sequence[LatencyResult], label: Callable[[LatencyResult], str] = lambda r: r.server.label
) -> list[RenderableType]:
    """The Model section; nothing for runs without a model (files saved before it, unknown service)."""
    runs = [r for r in results if r.model is not None and r.ok]
    if not runs:
        return []
    first = runs[0]
    assert first.model is not None
    line = model_line(runs, label)
    _, fixed = judged(runs)
    # the sentence below says what the fixed path is; the title, that the table's predictions hold it too
    path = f" (each prediction with the {fixed:.2f} ms fixed path)" if fixed > 0 else ""
    return [
        Text(
            f"Model: queueing alone, {plural(first.model.workers, 'worker')}, {_load_text(first)}: "
            f"predicted/measured ms{path}",
            style="bold",
        ),
        Verbatim(model_table_lines(runs, label)),
        Text("service time: " + "; ".join(_service_text(r, label) for r in runs), style="dim"),
        Text(
            NOTE
            + (RHO_NOTE if any(r.model.utilisation is not None for r in runs if r.model) else "")
            + (FIRST_NOTE if any(r.model.discipline == "first" for r in runs if r.model) else "")
            + _holder_note(runs)
            + _reach_note(runs, label)
            + _pinned_note(runs, label),
            style="dim",
        ),
        *([Text.assemble(("Model: ", "bold"), line)] if line else []),
    ]


MODEL_FIELDS = ("discipline", "batch", "loop", "concurrency", "rate", "workers", "service_source",
                "service_count", "service_mean_ms", "simulated")  # fmt: skip


def model_csv(runs: list[dict[str, Any]]) -> str:
    """`show --format csv --table model`: each run's model inputs, then predicted and measured figures (a run
    without a model: its name only). Predicted as the table and the sentence have them: the model's figure plus
    the fixed path (fixed_path_ms), from the same place (model_verdict.predicted_ms)."""
    figures = [(name, key) for name, key, _ in COLUMNS]
    header = (
        "run",
        *MODEL_FIELDS,
        "fixed_path_ms",
        *(f"predicted_{n}_ms" for n, _ in figures),
        *(f"measured_{n}_ms" for n, _ in figures),
    )
    results = [LatencyResult.from_dict(run) for run in runs]
    _, fixed = judged(results)  # over the runs shown together, as the table has it
    rows: list[list[Any]] = []
    for run, result in zip(runs, results, strict=True):
        model = run.get("model")
        h = LatencyHistogram.from_dict(run["histogram"])
        if not isinstance(model, dict) or not h.count:  # saved before the model, or nothing served: a row all the same
            rows.append([export.label(run)])
            continue
        measured = [h.percentile(q) / 1000 if q is not None else h.stdev_us / 1000 for _, _, q in COLUMNS]
        assert result.model is not None  # built from the same dict
        predicted = [predicted_ms(result.model, key, fixed) for _, key in figures]
        rows.append([export.label(run), *(model.get(f) for f in MODEL_FIELDS), fixed, *predicted, *measured])
    return export.csv_text(header, rows)
