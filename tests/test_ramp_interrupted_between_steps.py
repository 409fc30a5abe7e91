"""A ramp Ctrl-C stopped between two steps (no step cut short: the signal came while a step was judged or the
next one set up, most of the time with short steps) keeps the steps it finished, all held, and never ran the
later ones: it is not read as 'every step held, the breaking point is further out', alone or in a repeat."""

from __future__ import annotations

import dataclasses

from test_repeat import text_of
from test_repeat_experiments import ramp

from accept_order.experiments.documents import render_document
from accept_order.experiments.ramp.repeated import held_higher, knee_outcome
from accept_order.experiments.ramp.result import RampResult


def between_steps(run: RampResult, finished: int) -> RampResult:
    """The run as Ctrl-C between step `finished` and the next leaves it: those steps, whole, and interrupted."""
    return dataclasses.replace(run, steps=run.steps[:finished], interrupted=True)


def test_a_ramp_interrupted_between_steps_says_so() -> None:
    run = between_steps(ramp("epoll", [True, True, True]), 2)  # 500/s and 1000/s held; 2000/s never ran
    assert run.cut_short
    shown = text_of(render_document("ramp", run.to_dict()))
    assert "Every step held" not in shown and "further out" not in shown, shown
    assert "Interrupted after 1000/s: every step run held; the later ones were not run." in shown, shown


def test_a_ramp_interrupted_after_its_last_step_is_whole() -> None:
    """The signal after the last step: every planned step ran and held, so that is what it says."""
    run = between_steps(ramp("epoll", [True, True, True]), 3)
    assert not run.cut_short
    assert "Every step held, up to 2000/s" in text_of(render_document("ramp", run.to_dict()))
    assert not between_steps(ramp("epoll", [True, False, True]), 2).cut_short  # it broke first: a knee


def test_a_repeat_does_not_count_a_ramp_interrupted_between_steps_as_every_step_held() -> None:
    interrupted = between_steps(ramp("epoll", [True, True, True]), 2)
    assert knee_outcome(interrupted) == "held to 1000/s, then interrupted"
    assert held_higher([interrupted, ramp("reuseport", [True, False])]) is None
    rounds = [[interrupted, ramp("reuseport", [True, False])], [ramp("epoll", [True] * 3), ramp("reuseport", [True])]]
    doc = {"of": "ramp", "rounds": [[r.to_dict() for r in row] for row in rounds], "machine": {}}
    shown = text_of(render_document("repeat", doc))
    assert "every step held in 1/2; interrupted in 1/2" in shown, shown
    assert "every step held in every run" not in shown
