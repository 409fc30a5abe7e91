"""ramp --repeat's knee column: 'ramp --modes epoll,reuseport --rates 500,1000,2000 --repeat 2' showed epoll's knee
as '1500/s (1000-2000)', a load no run offered: the median of two runs' steps (1000/s, and 2000/s from a run
where every step held, which has no knee at all). The knee is now the lower middle of the runs that had one,
always a step that ran, and a run that held every step (or was cut short) is counted apart."""

from __future__ import annotations

import pytest
from rich.console import Console
from test_repeat_experiments import ramp

from accept_order.experiments.documents import render_document
from accept_order.experiments.ramp.result import RampResult

RATES = (500.0, 1000.0, 2000.0, 4000.0)  # a step more than test_repeat_experiments' ramps


def _ramp(mode: str, held: list[bool]) -> RampResult:
    return ramp(mode, held, RATES)


def _epoll_row(runs: list[RampResult]) -> str:
    """The table's epoll row (one line: the console is wide), its knee column first after the mode."""
    doc = {"of": "ramp", "rounds": [[r.to_dict()] for r in runs], "machine": {}}
    console = Console(width=300, record=True, color_system=None)
    with console.capture() as capture:
        console.print(render_document("repeat", doc))
    row = next(line for line in capture.get().splitlines() if line.lstrip().startswith("epoll"))
    return " ".join(row.split()[1:])


def test_the_knee_over_an_even_count_of_runs_is_a_step_that_ran() -> None:
    """Of two runs each knee, not the lower under 'median (min-max)' ('1000/s (1000-2000)' said the slower run's
    step as the middle of two); of four whose middle two differ, both."""
    row = _epoll_row([_ramp("epoll", [True, True, False]), _ramp("epoll", [True, True, True, False])])
    assert row.startswith("1000/s and 2000/s 2000/s and 4000/s"), row  # not 1500/s, nor 3000/s, nor the lower
    four = [[True, False], [True, True, False], [True, True, True, False], [True, True, True, False]]
    row = _epoll_row([_ramp("epoll", held) for held in four])
    assert row.startswith("1000/s and 2000/s in the middle (500-2000) 2000/s and 4000/s in the middle (1000-4000)"), row
    same = _epoll_row([_ramp("epoll", [True, True, False])] * 2)
    assert same.startswith("1000/s (1000-1000) 2000/s (2000-2000)"), same  # alike: the step, as before


def test_a_run_that_held_every_step_has_no_knee_to_count() -> None:
    row = _epoll_row([_ramp("epoll", [True, True, False]), _ramp("epoll", [True, True, True, True])])
    assert row.startswith("1000/s in 1/2; every step held in 1/2 2000/s in 1/2; every step held in 1/2"), row
    assert _epoll_row([_ramp("epoll", [True] * 4)] * 2).startswith("every step held in 2/2")


def test_the_repeat_picture_draws_each_ramp_and_calls_no_run_that_held_every_step_a_knee() -> None:
    """The picture of the runs above was one dot per run on an axis named 'knee: the last step that held', the
    first run's epoll at 2000/s though every step of it held (the table: 'every step held (to 2000/s)'), and
    'ramp --modes epoll,reuseport' drew two dots. It draws each run's ramp: throughput above, p99 below, a
    cross only at a step that did not hold."""
    pytest.importorskip("matplotlib")
    from accept_order.experiments.documents import plot_document

    runs = [_ramp("epoll", [True, True, False]), _ramp("epoll", [True, True, True, True])]
    figure = plot_document("repeat", {"of": "ramp", "rounds": [[r.to_dict()] for r in runs], "machine": {}})
    top, bottom = figure.axes[:2]
    assert "knee" not in figure.get_suptitle() and "Throughput and p99" in figure.get_suptitle()
    assert (top.get_ylabel(), bottom.get_ylabel()) == ("served per second", "p99 latency, ms")
    curves = [line for line in top.get_lines() if line.get_marker() == "o"]
    assert sorted(len(line.get_xdata()) for line in curves) == [3, 4]  # each run's every step
    crosses = [x for line in top.get_lines() if line.get_marker() == "x" for x in line.get_xdata()]
    assert crosses == [2000]  # the first run's step that did not hold; the second run held all four


def _shown(rounds: list[list[RampResult]]) -> str:
    doc = {"of": "ramp", "rounds": [[r.to_dict() for r in row] for row in rounds], "machine": {}}
    console = Console(width=300, record=True, color_system=None)
    with console.capture() as capture:
        console.print(render_document("repeat", doc))
    return capture.get()


def test_ramp_modes_without_repeat_shows_each_modes_steps() -> None:
    """'ramp --modes epoll,reuseport' (one round) printed a knee per mode under 'accept-order ramp --repeat' and
    not one step: no got/s, p99 or failures of either ramp. Each mode's steps come first now."""
    one = _shown([[_ramp("epoll", [True, False]), _ramp("reuseport", [True, True])]])
    assert "accept-order ramp --modes" in one and "accept-order ramp --repeat" not in one
    assert one.count("got/s") == 2 and "p99 30.0 ms > 20 ms" in one, one
    twice = _shown([[_ramp("epoll", [True, False])], [_ramp("epoll", [True, True])]])
    assert "accept-order ramp --repeat" in twice and "got/s" not in twice  # rounds: the comparison only
