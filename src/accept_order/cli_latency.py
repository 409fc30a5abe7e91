"""Commands `latency` and `sweep`: CPU-bound workers under a closed-loop load, mmhistogram-style output.

Registered on the `main` group by the import line at the end of cli.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from . import records
from .api import work_ms_to_us
from .cli import handle_errors, json_option, main, mode_option, server_options, stderr, stdout, timeout_option
from .latency import (
    DEFAULT_CONCURRENCY,
    DEFAULT_REQUESTS,
    DEFAULT_TIMEOUT_S,
    LatencyPlan,
    Tick,
    compare_latency,
    compare_report,
    latency_report,
    make_latency_plan,
    parse_batches,
    parse_duration,
    run_latency,
    sweep_accept_batch,
    sweep_report,
    tail_verdict,
)
from .loadgen import DEFAULT_PROCS
from .modes import parse_modes

F = TypeVar("F", bound=Callable[..., Any])


def _reuse(bundle: Callable[[Any], Any], skip: tuple[str, ...] = (), **defaults: Any) -> Callable[[F], F]:
    """cli.py's option bundle `bundle`, minus the options named in `skip`, with some defaults changed.

    click keeps a function's pending options in `__click_params__` (the list `click.option` appends to);
    applying the bundle to a throwaway function gives fresh copies of its options to pick from.
    """

    def apply(func: F) -> F:
        probe = bundle(lambda: None)
        params = [p for p in probe.__click_params__ if p.name not in skip]
        for p in params:
            if p.name in defaults:
                p.default, help_text = defaults[p.name]
                p.show_default = False
                p.help = help_text
        func.__click_params__ = [*getattr(func, "__click_params__", []), *params]  # type: ignore[attr-defined]
        return func

    return apply


def _duration(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def load_options(func: F) -> F:
    """The CPU-bound handler and the closed-loop load."""
    options = [
        click.option(
            "--work-us",
            type=int,
            default=None,
            help="CPU a worker burns per request, in microseconds (a timed busy loop, not a sleep).",
        ),
        click.option(
            "--work-iters",
            type=int,
            default=0,
            show_default=True,
            help="Loop iterations a worker counts per request, like the seed's Lua loop (adds to --work-us).",
        ),
        click.option(
            "--requests",
            "-n",
            type=int,
            default=None,
            help=f"Requests to finish (default {DEFAULT_REQUESTS}; not with --duration).",
        ),
        click.option(
            "--duration",
            "duration_s",
            callback=_duration,
            default=None,
            help="Run for this long instead of a request count: 10s, 500ms, 2m.",
        ),
        click.option(
            "--concurrency",
            "-c",
            type=int,
            default=DEFAULT_CONCURRENCY,
            show_default=True,
            help="Requests in flight: each ends (connect, read reply, close) and the next starts at once.",
        ),
        click.option(
            "--driver-procs",
            type=int,
            default=DEFAULT_PROCS,
            show_default=True,
            help="Load generator processes sharing the concurrency.",
        ),
        timeout_option(DEFAULT_TIMEOUT_S, "request"),
        click.option("--pin", is_flag=True, help="Pin worker i to the i-th CPU (see --cpus to choose them)."),
        json_option(),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def plan_from(options: dict[str, Any]) -> LatencyPlan:
    options = dict(options)
    work_ms, work_us = options.pop("work_ms", 0.0) or 0.0, options.pop("work_us", None)
    if work_ms and work_us is not None:
        raise click.BadParameter("give --work-us or --work-ms, not both", param_hint="--work-us")
    options["work_us"] = work_us if work_us is not None else work_ms_to_us(work_ms)
    return make_latency_plan(**options)


@contextmanager
def progress(label: str, plan: LatencyPlan) -> Iterator[Tick | None]:
    """A progress bar on stderr while the load runs; nothing when stderr is not a terminal."""
    console = stderr()
    if not console.is_terminal:
        yield None
        return
    by_count = plan.requests is not None
    total = plan.requests if by_count else plan.duration_s
    columns = [TextColumn(label), BarColumn()]
    columns.append(MofNCompleteColumn() if by_count else TextColumn("{task.fields[done]} requests"))
    columns.append(TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(label, total=total, done=0)

        def tick(done: int, elapsed: float) -> None:
            bar.update(task, completed=done if by_count else min(elapsed, total or 0.0), done=done)

        yield tick


@contextmanager
def _runs(label: Callable[[LatencyPlan], str]) -> Iterator[Callable[[LatencyPlan], Tick | None]]:
    """A fresh progress bar for each run of a compare or sweep."""
    stack: list[Any] = []

    def on_run(plan: LatencyPlan) -> Tick | None:
        while stack:
            stack.pop().__exit__(None, None, None)
        bar = progress(label(plan), plan)
        tick = bar.__enter__()
        stack.append(bar)
        return tick

    try:
        yield on_run
    finally:
        while stack:
            stack.pop().__exit__(None, None, None)


def _print(renderable: Any, json_path: str | None) -> None:
    # crop=False: the mmhistogram lines are longer than 80 columns and must print whole when piped.
    stdout().print(renderable, crop=False)
    if json_path:
        stderr().print(f"wrote {json_path}")


@main.command()
@mode_option(default="blocking")
@_reuse(server_options, workers=(None, "Worker processes [default: one per CPU]."))
@load_options
@click.option(
    "--compare",
    "compare_modes",
    default=None,
    help="Comma-separated modes to run one after the other with the same settings, e.g. blocking,reuseport.",
)
@click.option("--title", default=None, help="Histogram title (default: 'Duration in ms (MODE)').")
@handle_errors
def latency(json_path: str | None, compare_modes: str | None, title: str | None, **options: Any) -> None:
    """Latency under load: CPU-bound workers, a closed-loop load, mmhistogram-style histogram."""
    modes = parse_modes(compare_modes) if compare_modes is not None else None
    plan = plan_from(options)
    if modes is None:
        with progress(f"{plan.mode}: requests", plan) as tick:
            result = run_latency(plan, tick, title)
        if json_path:
            records.save(json_path, "latency", result.to_dict())
        _print(latency_report(result), json_path)
        return
    with _runs(lambda p: f"{p.mode}: requests") as on_run:
        results, skipped = compare_latency(plan, modes, on_run)
    verdict = tail_verdict(results)
    if json_path:
        doc = {"runs": [r.to_dict() for r in results], "skipped": skipped, "verdict": verdict.to_dict()}
        records.save(json_path, "latency-compare", doc)
    _print(compare_report(results, skipped, verdict), json_path)


@main.command()
@mode_option(default="epoll")
@_reuse(server_options, skip=("accept_batch",), workers=(None, "Worker processes [default: one per CPU]."))
@click.option(
    "--accept-batch",
    "batches",
    default="1,4,32,0",
    show_default=True,
    help="Caps on connections accepted per wakeup to try, one run each (0: until EAGAIN).",
)
@load_options
@handle_errors
def sweep(json_path: str | None, batches: str, **options: Any) -> None:
    """One latency run per accepts-per-wakeup cap (nginx multi_accept, DragonFly soavailconn)."""
    values = parse_batches(batches)
    plan = plan_from(options)
    with _runs(lambda p: f"accept-batch {p.server.accept_batch or 'none'}") as on_run:
        results = sweep_accept_batch(plan, values, on_run)
    if json_path:
        records.save(json_path, "sweep", {"runs": [r.to_dict() for r in results]})
    _print(sweep_report(results), json_path)
