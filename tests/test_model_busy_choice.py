"""The busy-time looks' choice of the latency model's service source says how sure it is, and their busy time is
weighted by the time each look stood for (probes/busy_waits.py, analysis/busy_choice.py).

The looks' thread is late where this tool's interpreter or the CPUs are taken (the run's set-up and end, when the
workers are idle; other processes): counted one look one share, a gunicorn sleeping 2 ms beside two CPU hogs read
14.9 ms a connection where it read 2.7-3.3 ms without them. And a share of a few busy looks may fall either side of
the fifth that chooses the busy time: the report now says how sure the choice is, and too few looks choose their CPU,
said not sure. A real gunicorn (sleeping 2 ms, its access log the witness of each request's time) on runs of a few
tenths of a second is modelled by its busy time every time, surely; on a run of a few connections its looks are too
few, and the report says so."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from cli_runs import run_cli
from gunicorn_by_hand import HandGunicorn, gunicorn_by_hand
from python_processes import pythons
from test_attached_listener_queues_model import attached

from accept_order.analysis.busy_choice import MIN_BUSY_LOOKS, choose, wilson
from accept_order.experiments.latency.model_check import predict
from accept_order.experiments.latency.model_report import choice_text
from accept_order.probes.busy_waits import BusySampler, busy_reading
from accept_order.probes.proc_waits import syscall_names

TIMEOUT_S = 30.0
SLEEP_MS = 2
APP = f"""
import time


def app(environ, start_response):
    time.sleep({SLEEP_MS / 1000})
    start_response("200 OK", [("Content-Length", "3")])
    return [b"ok\\n"]
"""


class _Clock:
    """A clock a test sets: the seconds the sampler times its looks by."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_each_look_stands_for_the_time_since_the_one_before() -> None:
    """A worker idle for 0.9 s, looked at twice in it (the looks' thread late), then busy in an app's sleep for 0.1 s,
    looked at 20 times: busy 0.1 s of the 1 s, not 20/22 of it."""
    accept4 = {name: number for number, name in syscall_names().items()}.get("accept4")
    nanosleep = {name: number for number, name in syscall_names().items()}.get("clock_nanosleep")
    if accept4 is None or nanosleep is None:
        pytest.skip("this machine's system call table is not known to probes/proc_waits.py")
    calls = iter([f"{accept4} 0x3 0x0 0x0 0x80800 0x0 0x0 0x0 0x0"] * 2 + [f"{nanosleep} 0x1 0x0 0x0 0x0 0x0 0x0"] * 20)
    clock = _Clock()
    with pythons(("import time; print(1, flush=True); time.sleep(60)",)) as procs:  # a worker of one thread
        assert procs[0].stdout is not None and procs[0].stdout.readline() == "1\n"
        sampler = BusySampler([procs[0].pid], read=lambda path: next(calls).encode(), clock=clock)
        sampler.start(thread=False)
        for at in [0.45, 0.9] + [0.9 + 0.005 * k for k in range(1, 21)]:
            clock.now = at
            assert sampler.look()
        read = sampler.stop()
    assert read is not None and read["span_s"] == pytest.approx(1.0), read
    busy = busy_reading({"busy_waits": read}, 1)
    assert busy is not None and busy.busy_s == pytest.approx(0.1), (busy, read)
    assert busy.waited_share == pytest.approx(1.0) and (busy.busy_looks, busy.slept_looks) == (20, 20), busy
    # a file from before the times were kept: each look an equal share, as then
    old = {**read, "workers": [{k: v for k, v in read["workers"][0].items() if not k.endswith("_s")}]}
    assert busy_reading({"busy_waits": old}, 1).busy_s == pytest.approx(20 / 22)  # type: ignore[union-attr]


def test_the_choice_says_how_sure_it_is() -> None:
    """The share's 95% Wilson interval on one side of the fifth: sure; across it: the point share decides, not sure;
    too few busy looks: their CPU, not sure."""
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert (c := choose(100, 60, 0.6)).busy and c.sure, c
    assert (c := choose(100, 5, 0.05)) and not c.busy and c.sure, c
    assert (c := choose(60, 15, 0.25)).busy and not c.sure, c  # 14%-37%
    assert (c := choose(60, 9, 0.15)) and not c.busy and not c.sure, c  # 8%-26%
    few = choose(MIN_BUSY_LOOKS - 1, MIN_BUSY_LOOKS - 1, 1.0)
    assert not few.busy and not few.sure, few


def _looks(busy: int, slept: int) -> dict[str, object]:
    """Evidence busy_waits of 4 workers over 2 s, each looked at 400 times: `busy` of those busy, `slept` of them in
    an app's sleep."""
    worker = {"looks": 400, "idle": 400 - busy, "waits": {"clock_nanosleep": slept} if slept else {}}
    return {"span_s": 2.0, "workers": [{"pid": 4243 + i, **worker} for i in range(4)]}


def test_the_report_says_which_source_and_why() -> None:
    plain = attached(None, rows=1)
    cases = [  # (busy looks a worker, asleep of those, source, what the service line says)
        (300, 200, "busy", "their busy time taken: 800 of the 1,200 busy looks found them asleep (67% of the busy"),
        (300, 20, "cpu", "their CPU taken: 80 of the 1,200 busy looks found them asleep (7% of the busy time"),
        (12, 12, "cpu", "their CPU taken, not surely: the looks at their calls found the workers busy 48 times"),
        (15, 4, "busy", "either side of the 20% that decides: not sure, another run may take their CPU"),
    ]
    for busy, slept, source, said in cases:
        model = predict(replace(plain, evidence={**plain.evidence, "busy_waits": _looks(busy, slept)}))
        assert model is not None and model.service_source == source, (busy, slept, model)
        assert model.busy_looks == 4 * busy and model.slept_looks == 4 * slept, model
        assert said in choice_text(model), (said, choice_text(model))
        kept = model.to_dict()
        assert (kept["busy_looks"], kept["slept_looks"]) == (4 * busy, 4 * slept), kept
    assert "busy_looks" not in predict(plain).to_dict()  # type: ignore[union-attr]  # not looked at: as before


@pytest.fixture
def gunicorn_sleeping(tmp_path: Path) -> Iterator[HandGunicorn]:
    with gunicorn_by_hand(APP, tmp_path, 3, TIMEOUT_S, "--access-logformat", "%(D)s") as gunicorn:
        yield gunicorn


def _latency(gunicorn: HandGunicorn, folder: Path, connections: int) -> tuple[str, dict[str, object], list[int]]:
    """'latency --attach' at `gunicorn`, `connections` of them 12 at once: its output, its model, and gunicorn's own
    time for each of its requests (its access log, µs)."""
    out = folder / f"latency-{connections}.json"
    gunicorn.access_log.write_text("")
    args = ["latency", "--attach", str(gunicorn.master), "--port", str(gunicorn.port), "--protocol", "http"]
    result = run_cli([*args, "-n", str(connections), "-c", "12", "--json", str(out)], columns=400)
    assert result.exit_code == 0, result.output
    times_us = [int(line) for line in gunicorn.access_log.read_text().split()]
    assert len(times_us) == connections, times_us[:5]
    return result.output, json.loads(out.read_text())["model"], times_us


def test_short_runs_at_a_gunicorn_that_sleeps_choose_its_busy_time_surely(
    gunicorn_sleeping: HandGunicorn, tmp_path: Path
) -> None:
    """Three runs of 150 connections (a few tenths of a second each): each its busy time, surely, at least what
    gunicorn timed in its app; one of 12 (4 a worker) reads too few busy looks and says so."""
    for _ in range(3):
        output, model, times_us = _latency(gunicorn_sleeping, tmp_path, 150)
        assert min(times_us) >= SLEEP_MS * 1000, times_us[:5]
        assert model["service_source"] == "busy", model
        assert isinstance(looks := model["busy_looks"], int) and looks >= MIN_BUSY_LOOKS, model
        assert isinstance(slept := model["slept_looks"], int) and wilson(slept, looks)[0] >= 0.2, model
        assert isinstance(mean := model["service_mean_ms"], float) and mean >= 0.9 * sum(times_us) / 150 / 1000, model
        assert "their busy time taken: " in output and "at or over the 20% that decides" in output, output
    output, model, _ = _latency(gunicorn_sleeping, tmp_path, 12)
    assert isinstance(looks := model["busy_looks"], int) and looks < MIN_BUSY_LOOKS, model
    assert model["service_source"] == "cpu", model
    assert "their CPU taken, not surely: the looks at their calls found the workers busy" in output, output


def test_a_pool_that_starts_its_threads_during_the_run_is_not_read(tmp_path: Path) -> None:
    """gunicorn's gthread workers start their pool's threads on demand (Python's ThreadPoolExecutor): one thread each
    as the run starts, 5 by its end. Their looks read the main thread alone (its poll), and one run read '33% of it
    asleep ... in poll, futex' and modelled 3 servers one at a time on the kernel's accept gaps of that thread's
    loop. Read again as the run ends: not the busy time, and the model says each worker is a pool."""
    options = ("--worker-class", "gthread", "--threads", "4", "--access-logformat", "%(D)s")
    with gunicorn_by_hand(APP, tmp_path, 3, TIMEOUT_S, *options) as gunicorn:
        output, model, _ = _latency(gunicorn, tmp_path, 300)
        document = json.loads((tmp_path / "latency-300.json").read_text())
    looked = document["evidence"]["busy_waits"]["workers"]
    assert [w["threads"] for w in looked] == [1, 1, 1] and all(w["threads_end"] > 1 for w in looked), looked
    assert model["service_source"] != "busy" and "service_gaps" not in model and "busy_looks" not in model, model
    assert "each is a process of 5 threads" in output, output
