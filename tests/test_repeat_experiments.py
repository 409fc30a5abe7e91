"""--repeat on burst, ramp and reload: each experiment's rounds, interleaved, reported as medians and ranges
with the same agreement counting as latency's and compare's ("X in k/n runs", conclusive at AGREE).

The verdicts over the runs are checked on synthetic rounds whose figures decide them (a mode fastest in every
round, in 2 of 3, tied; a ramp that broke later, or never; a mode that lost connections in one round of
three); the live runs are small, and checked against what the kernel guarantees (a worker leaving a shared
queue loses nothing) and against the verdict of the rounds they saved."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import assert_one_error_line, run_cli
from test_repeat import text_of

from accept_order.analysis.stability import agreement
from accept_order.core.measures import Environment
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.experiments.burst.repeated import fastest, fastest_stability
from accept_order.experiments.burst.result import BurstCell, BurstRun
from accept_order.experiments.documents import render_document
from accept_order.experiments.ramp.repeated import broke_lines, held_higher, higher_stability, knee_outcome
from accept_order.experiments.ramp.result import RampResult, RampStep
from accept_order.experiments.reload.repeated import verdict_stability, who_lost_nothing
from accept_order.experiments.reload.result import ReloadRun
from accept_order.experiments.repeat.result import RepeatResult

ENV = Environment("Linux", "6.0", "x86_64", 2, 4096, "3.11", "host", "2024-01-01T00:00:00+00:00")


def burst(mode: str, wall_s: float, failed: int = 0, clients: int = 100) -> BurstRun:
    errors = {"timeout": failed} if failed else {}
    cell = BurstCell(clients, wall_s, (clients - failed, 0), errors, {}, ())
    return BurstRun(ServerSpec(mode=mode, workers=2), (cell,), ENV)


def ramp(mode: str, held: list[bool], rates: tuple[float, ...] = (500, 1000, 2000)) -> RampResult:
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


def reloaded(mode: str, lost: int, migrate: int = 0) -> ReloadRun:
    queue = "per-worker" if mode.startswith("reuseport") else "shared"
    return ReloadRun(
        server=ServerSpec(mode=mode, workers=2),
        load=ConcurrentLoad(connections=None, duration_s=1.0, concurrency=4),
        how="leave",
        migrate=migrate,
        queue=queue,
        passes=False,
        worker=0,
        at_s=0.5,
        gone_s=0.01,
        held=0,
        served=(100, 100),
        finished=200 + lost,
        errors={"ECONNRESET": lost} if lost else {},
        counters={},
        worker_counters=(),
        environment=ENV,
        wall_s=1.0,
    )


# -- the counting itself ---------------------------------------------------------------------------------


def test_agreement_is_conclusive_at_four_runs_of_five_and_names_the_rivals_below() -> None:
    four = agreement(["a", "a", "a", "a", "b"], "won", "nobody won")
    assert (four.conclusive, four.agree, four.winner, four.text) == (True, 4, "a", "a won in 4/5 runs")
    three = agreement(["a", "b", "a", None, "a"], "won", "nobody won")
    assert not three.conclusive
    assert three.text == "inconclusive: a won in 3/5 runs, b in 1, none in 1; try more --repeat"
    none = agreement([None, None], "won", "nobody won")
    assert (none.conclusive, none.winner, none.text) == (False, None, "nobody won in any of 2 runs")


def test_progress_says_which_run_of_n(monkeypatch: pytest.MonkeyPatch) -> None:
    """--repeat 3 of two variants is 6 runs: each bar's label counts every run of every round."""
    from accept_order.cli import repeat_common
    from accept_order.cli.progress import RunProgress
    from accept_order.cli.served_nothing import Tally
    from accept_order.core.spec import ServerSpec

    monkeypatch.setattr(repeat_common, "report_and_save", lambda *a: None)
    monkeypatch.setattr(
        "accept_order.experiments.repeat.result.repeated", lambda *a, **k: SimpleNamespace(to_dict=dict)
    )
    monkeypatch.setattr("accept_order.experiments.repeat.experiment.report", lambda *a: None)
    clock = iter(range(0, 1000, 10))
    progress = RunProgress(3, clock=lambda: float(next(clock)), write=lambda line: None)
    labels: list[str] = []
    served = Tally("A", ServerSpec(), 1, {})  # each run read as one that served (cli/served_nothing.py)
    run_one = lambda v: labels.append(progress.label(v))  # noqa: E731
    repeat_common.run_repeated("compare", ["A", "B"], 3, run_one, {}, None, progress, tally=lambda _: served)
    assert [label.split(",")[0].split(":")[0] for label in labels] == [f"run {k} of 6" for k in range(1, 7)]
    assert labels[0] == "run 1 of 6: A" and labels[-1].endswith(" left: B")
    assert RunProgress(1).label("A") == "A"


# -- burst -----------------------------------------------------------------------------------------------


def test_a_burst_round_names_the_fastest_only_by_a_clear_margin_and_only_if_it_served_all() -> None:
    assert fastest([burst("epoll", 1.0), burst("reuseport", 1.5)], 100) == "epoll"
    assert fastest([burst("epoll", 1.0), burst("reuseport", 1.05)], 100) is None  # within 10%: a tie
    # reuseport was sooner but lost clients: it never served them all
    assert fastest([burst("epoll", 1.0), burst("reuseport", 0.2, failed=3)], 100) == "epoll"
    assert fastest([burst("epoll", 1.0, failed=1), burst("reuseport", 0.2, failed=3)], 100) is None
    assert fastest([burst("epoll", 1.0), burst("reuseport", 1.5)], 5000) is None  # no such burst ran


def test_burst_verdicts_count_the_rounds_per_client_count() -> None:
    every = [[burst("epoll", 1.0), burst("reuseport", 2.0)]] * 3
    assert fastest_stability(every, 100).text == "epoll was fastest to serve all 100 clients in 3/3 runs"
    split = [[burst("epoll", 1.0), burst("reuseport", 2.0)]] * 2 + [[burst("epoll", 2.0), burst("reuseport", 1.0)]]
    verdict = fastest_stability(split, 100)
    assert (verdict.conclusive, verdict.agree, verdict.winner) == (False, 2, "epoll")
    assert verdict.text == (
        "inconclusive: epoll was fastest to serve all 100 clients in 2/3 runs, reuseport in 1; try more --repeat"
    )
    doc = {"of": "burst", "rounds": [[r.to_dict() for r in row] for row in split], "machine": {}}
    shown = text_of(render_document("repeat", doc))
    assert "Verdict, 100 clients: inconclusive: epoll was fastest to serve all 100 clients in 2/3 runs" in shown
    # the next mode's time over epoll's: 2.0 twice, 0.5 once
    assert "the quickest other took 2.00 (0.50-2.00)× its time (below 1: sooner); try more --repeat" in shown
    assert "1.00 (1.00-2.00) s" in shown and "2.00 (1.00-2.00) s" in shown


# -- ramp ------------------------------------------------------------------------------------------------


def test_a_ramp_round_names_the_mode_that_held_a_higher_load() -> None:
    assert held_higher([ramp("epoll", [True, False]), ramp("reuseport", [True, True, False])]) == "reuseport"
    assert held_higher([ramp("epoll", [True, True, True]), ramp("reuseport", [True, True, False])]) == "epoll"
    assert held_higher([ramp("epoll", [True, False]), ramp("reuseport", [True, False])]) is None  # same step
    assert held_higher([ramp("epoll", [True] * 3), ramp("reuseport", [True] * 3)]) is None  # neither broke


def test_the_knee_over_the_runs_says_where_the_runs_put_it() -> None:
    assert knee_outcome(ramp("epoll", [True, False])) == "last held 500/s"
    assert knee_outcome(ramp("epoll", [False])) == "no step held"
    assert knee_outcome(ramp("epoll", [True] * 3)) == "every step held (to 2000/s)"
    moved = [[ramp("epoll", [True, False])], [ramp("epoll", [True, True, False])], [ramp("epoll", [True, False])]]
    doc = {"of": "ramp", "rounds": [[r.to_dict() for r in row] for row in moved], "machine": {}}
    shown = text_of(render_document("repeat", doc))
    assert "500/s (500-1000)" in shown and "1000/s (1000-2000)" in shown
    assert "inconclusive: last held 500/s in 2/3 runs, last held 1000/s in 1; try more --repeat" in shown
    assert "epoll, did not hold: p99 30 ms > 20 ms in 3/3" in shown  # 30.0 ms each time: one reason, counted
    assert "Verdict" not in shown  # one mode: nobody to have held more than


def test_ramp_verdict_counts_who_held_more() -> None:
    rounds = [[ramp("epoll", [True, False]), ramp("reuseport", [True, True, False])]] * 4 + [
        [ramp("epoll", [True, False]), ramp("reuseport", [True, False])]
    ]
    verdict = higher_stability(rounds)
    assert verdict.text == "reuseport held a higher load than the others in 4/5 runs" and verdict.conclusive


# -- reload ----------------------------------------------------------------------------------------------


def test_reload_verdict_holds_in_k_of_n_runs() -> None:
    good = [reloaded("epoll", 0), reloaded("reuseport", 7), reloaded("reuseport", 0, migrate=1)]
    assert who_lost_nothing(good) == "only epoll leave, reuseport leave migrate=1 lost nothing"
    bad = [reloaded("epoll", 0), reloaded("reuseport", 7), reloaded("reuseport", 2, migrate=1)]
    verdict = verdict_stability([good, good, bad])
    assert not verdict.conclusive
    assert verdict.text == (
        "inconclusive: only epoll leave, reuseport leave migrate=1 lost nothing in 2/3 runs, only epoll leave "
        "lost nothing in 1; try more --repeat"
    )
    assert verdict_stability([good] * 3).text == "only epoll leave, reuseport leave migrate=1 lost nothing in 3/3 runs"
    doc = {"of": "reload", "rounds": [[r.to_dict() for r in row] for row in (good, good, bad)], "machine": {}}
    shown = text_of(render_document("repeat", doc))
    row = next(line for line in shown.splitlines() if line.startswith(" reuseport leave migrate=1"))
    assert re.split(r"\s{2,}", row.strip()) == ["reuseport leave migrate=1", "200 (200-200)", "0 (0-2)", "0 (0-2)",
                                                "2/3", "kept in 2/3"]  # fmt: skip


# -- live runs -------------------------------------------------------------------------------------------


def test_burst_repeat_saves_its_rounds_and_shows_their_verdict(tmp_path: Path) -> None:
    out = tmp_path / "burst.json"
    args = ["burst", "--modes", "epoll,reuseport", "-w", "2", "--clients", "20", "--repeat", "2"]
    result = run_cli([*args, "--json", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["kind"] == "repeat" and doc["of"] == "burst"
    assert [[r["server"]["mode"] for r in row] for row in doc["rounds"]] == [["epoll", "reuseport"]] * 2
    assert all(
        sum(c["served"]) + sum(c["errors"].values()) == 20 for row in doc["rounds"] for r in row for c in r["cells"]
    )
    rounds = RepeatResult.from_dict(doc).rounds
    # as one line: a verdict that ranks none (the load generator set every pace) is long enough to wrap
    assert f"Verdict, 20 clients: {fastest_stability(rounds, 20, advice='').text}" in " ".join(result.stdout.split())
    assert run_cli(["show", str(out)]).stdout == result.stdout
    table = run_cli(["show", str(out), "--format", "csv"]).stdout.splitlines()
    assert table[0] == "round,run,clients,wall_s,served,failed,p50_us,max_us" and len(table) == 5
    workers = run_cli(["show", str(out), "--format", "csv", "--table", "workers"]).stdout.splitlines()
    assert workers[0] == "round,run,clients,worker,served" and len(workers) == 1 + 2 * 2 * 2


def test_ramp_repeat_reports_the_knee_over_the_runs_and_draws_them(tmp_path: Path) -> None:
    out = tmp_path / "ramp.json"
    args = ["ramp", "-w", "2", "--rates", "50", "--step", "200ms", "--repeat", "2", "--json", str(out)]
    result = run_cli(args)
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["of"] == "ramp" and [len(row) for row in doc["rounds"]] == [1, 1]
    runs = [RampResult.from_dict(row[0]) for row in doc["rounds"]]
    expected = agreement([knee_outcome(r) for r in runs], "", "").text
    assert expected in result.stdout
    pytest.importorskip("matplotlib")
    png = tmp_path / "ramp.png"
    drawn = run_cli(["plot", str(out), "-o", str(png)])
    assert drawn.exit_code == 0, drawn.output
    from matplotlib.image import imread

    assert imread(png).shape[1] >= 400


def test_ramp_takes_mode_or_modes_not_both() -> None:
    result = run_cli(["ramp", "--mode", "epoll", "--modes", "epoll,reuseport", "--repeat", "2"])
    assert_one_error_line(result, 2, "--mode", "--modes")


def test_an_interrupted_burst_repeat_keeps_the_rounds_that_finished(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from accept_order import api

    calls: list[str] = []

    def one(specs: list[ServerSpec], plan: object, on_burst: object) -> list[BurstRun]:
        calls.append(specs[0].mode)
        if len(calls) == 3:  # round 2's first run: Ctrl-C
            raise KeyboardInterrupt
        return [burst(specs[0].mode, 0.5, clients=20)]

    monkeypatch.setattr(api, "burst", one)
    out = tmp_path / "cut.json"
    args = ["burst", "--modes", "epoll,reuseport", "-w", "2", "--clients", "20", "--repeat", "3", "--json", str(out)]
    result = run_cli(args)
    assert result.exit_code == 130, result.output
    doc = json.loads(out.read_text())
    assert doc["interrupted"] is True and len(doc["rounds"]) == 1 and calls == ["epoll", "reuseport", "epoll"]
    # the report, then and again by show, says the rounds are those that finished before the interruption
    assert "1 round (interrupted: the rounds that finished)" in result.output
    shown = run_cli(["show", str(out)])
    assert shown.exit_code == 0 and "(interrupted: the rounds that finished)" in shown.output


def test_a_repeated_result_is_not_merged(tmp_path: Path) -> None:
    doc = {"of": "reload", "rounds": [[reloaded("epoll", 0).to_dict()]], "machine": {}}
    from accept_order.results.envelope import save

    for name in ("a", "b"):
        save(str(tmp_path / f"{name}.json"), "repeat", doc)
    result = run_cli(["merge", str(tmp_path / "a.json"), str(tmp_path / "b.json")])
    assert_one_error_line(result, 1, "holds a repeat result; merge adds latency results")


def test_reload_repeat_a_worker_leaving_a_shared_queue_loses_nothing_in_every_run(tmp_path: Path) -> None:
    """Run in a child process: reload moves the process into a private network namespace of its own."""
    out = tmp_path / "reload.json"
    args = ["--modes", "epoll", "--how", "leave", "-w", "2", "-c", "4", "--duration", "300ms", "--repeat", "2"]
    command = [sys.executable, "-m", "accept_order", "reload", *args, "--json", str(out)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0 and "cannot make a private network namespace" in proc.stderr:
        pytest.skip(proc.stderr.strip())
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["of"] == "reload" and len(doc["rounds"]) == 2
    assert "Verdict: epoll leave lost nothing in 2/2 runs" in proc.stdout


def test_every_repeatable_kind_is_found_through_the_registry_and_repeat_names_none() -> None:
    """Each `of` a repeat file may name has its Repeated (the file's shape allows exactly those), and
    experiments/repeat/ reaches an experiment only through that registry, never by importing it."""
    from accept_order.experiments.repeat import kinds
    from accept_order.experiments.repeat.result import REPEAT_SHAPE

    assert REPEAT_SHAPE.fields["of"].values == tuple(kinds.REPEATED)
    for of in kinds.REPEATED:
        found = kinds.find_repeated(of)
        assert found is not None and found.of == of
    package = Path(kinds.__file__).parent
    siblings = {p.name for p in package.parent.iterdir() if p.is_dir() and p.name != package.name}
    for module in package.glob("*.py"):
        imports = re.findall(r"^\s*from \.\.(\w+)", module.read_text(), re.MULTILINE)
        assert not set(imports) & siblings, f"{module.name} imports {set(imports) & siblings}"


def cut(run: RampResult) -> RampResult:
    """The run with Ctrl-C cutting its last step short (interrupted, no reason yet), as a hand-edited file has it."""
    last = dataclasses.replace(run.steps[-1], reasons=(), interrupted=True)
    return dataclasses.replace(run, steps=(*run.steps[:-1], last), interrupted=True)


def test_a_ramp_cut_short_is_not_read_as_every_step_held() -> None:
    """A step Ctrl-C stopped before it held or broke says nothing of where the run would have broken: not
    'every step held', and no mode held higher on its account."""
    interrupted = cut(ramp("epoll", [True, True, False]))
    assert knee_outcome(interrupted) == "held to 1000/s, then interrupted"
    assert knee_outcome(cut(ramp("epoll", [False]))) == "interrupted before a step held"
    assert held_higher([interrupted, ramp("reuseport", [True, False])]) is None
    rounds = [[interrupted, ramp("reuseport", [True, False])], [ramp("epoll", [True] * 3), ramp("reuseport", [True])]]
    doc = {"of": "ramp", "rounds": [[r.to_dict() for r in row] for row in rounds], "machine": {}}
    shown = text_of(render_document("repeat", doc))
    assert "every step held in 1/2; interrupted in 1/2" in shown, shown  # the epoll row's "broke at"
    assert "1000/s in 1/2; every step held in 1/2" in shown and "interrupted" not in shown.split("reuseport")[1], shown
    assert "every step held in every run" not in shown


def test_a_reason_over_the_runs_shows_the_range_of_its_figures() -> None:
    """'p99 N ms > 20 ms' counted the runs together but hid the figures: each N is now the range they spanned."""
    runs = []
    for p99, got in ((184.6, 900), (328.4, 950), (250.0, 900)):
        run = ramp("epoll", [True, False])
        last = dataclasses.replace(
            run.steps[-1], reasons=(f"p99 {p99} ms > 20 ms", f"finished {got}/s of 1000/s offered")
        )
        runs.append(dataclasses.replace(run, steps=(run.steps[0], last)))
    lines = [str(line) for line in broke_lines("epoll", runs)]
    assert lines == [
        "  epoll, did not hold: p99 184.6-328.4 ms > 20 ms in 3/3; finished 900-950/s of 1000/s offered in 3/3"
    ], lines
