"""ramp --repeat's knee column: 'ramp --modes epoll,reuseport --rates 500,1000,2000 --repeat 2' showed epoll's knee
as '1500/s (1000-2000)', a load no run offered: the median of two runs' steps (1000/s, and 2000/s from a run
where every step held, which has no knee at all). The knee is now the lower middle of the runs that had one,
always a step that ran, and a run that held every step (or was cut short) is counted apart."""

from __future__ import annotations

import pytest
from rich.console import Console

from accept_order.core.measures import Environment
from accept_order.core.spec import ServerSpec
from accept_order.experiments.documents import render_document
from accept_order.experiments.ramp.result import RampResult, RampStep

ENV = Environment("Linux", "6.0", "x86_64", 2, 4096, "3.11", "host", "2024-01-01T00:00:00+00:00")


def _ramp(mode: str, held: list[bool], rates: tuple[float, ...] = (500, 1000, 2000, 4000)) -> RampResult:
    steps = tuple(
        RampStep(
            "rate",
            rate,
            1.0,
            (int(rate),),
            {},
            1000,
            2000,
            3000,
            4000,
            {},
            {},
            (),
            (0.5,),
            0.1,
            reasons=() if ok else ("p99 30.0 ms > 20 ms",),
        )  # fmt: skip
        for rate, ok in zip(rates, held, strict=False)
    )
    return RampResult(ServerSpec(mode=mode, workers=1), {"rates": list(rates), "step_s": 1.0}, steps, ENV)


def _epoll_row(runs: list[RampResult]) -> str:
    """The table's epoll row (one line: the console is wide), its knee column first after the mode."""
    doc = {"of": "ramp", "rounds": [[r.to_dict()] for r in runs], "machine": {}}
    console = Console(width=300, record=True, color_system=None)
    with console.capture() as capture:
        console.print(render_document("repeat", doc))
    row = next(line for line in capture.get().splitlines() if line.lstrip().startswith("epoll"))
    return " ".join(row.split()[1:])


def test_the_knee_over_an_even_count_of_runs_is_a_step_that_ran() -> None:
    row = _epoll_row([_ramp("epoll", [True, True, False]), _ramp("epoll", [True, True, True, False])])
    assert row.startswith("1000/s (1000-2000) 2000/s (2000-4000)"), row  # not 1500/s, nor 3000/s


def test_a_run_that_held_every_step_has_no_knee_to_count() -> None:
    row = _epoll_row([_ramp("epoll", [True, True, False]), _ramp("epoll", [True, True, True, True])])
    assert row.startswith("1000/s (1000-1000); every step held in 1 2000/s (2000-2000); every step held in 1"), row
    assert _epoll_row([_ramp("epoll", [True] * 4)] * 2).startswith("every step held in 2/2")


def test_the_repeat_picture_calls_no_run_that_held_every_step_a_knee() -> None:
    """The picture of the runs above drew epoll's first run at 2000/s on an axis named 'knee: the last step that
    held', though every step of that run held (the table: 'every step held (to 2000/s) in 1/2 runs')."""
    pytest.importorskip("matplotlib")
    from accept_order.experiments.documents import plot_document

    runs = [_ramp("epoll", [True, True, False]), _ramp("epoll", [True, True, True, True])]
    figure = plot_document("repeat", {"of": "ramp", "rounds": [[r.to_dict()] for r in runs], "machine": {}})
    named = " ".join([figure.axes[0].get_ylabel(), figure.get_suptitle()])
    assert "knee" not in named and "the last step that held" in named, named
