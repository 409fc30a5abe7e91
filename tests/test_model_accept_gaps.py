"""Workers that serve one connection at a time are modelled on each connection's own time, the kernel's gaps between
a worker's accept that took a connection and its next accept call (probes/accept_program.py's @gap,
experiments/latency/model_check.served_between_accepts), not one busy-time mean for all.

On its mean, PyPI's gunicorn (3 sync workers, an app sleeping 2 ms, 12 clients) had its p99 predicted 0.76 of the
measured one (median of 13 runs), a deterministic service leaving every request the same wait; its gaps (CV 0.3-1.3,
with the machine's load) read 0.99. The real gunicorn's access log (%(D)s: each request's time in its app) is the
witness that each gap holds one request: as many gaps as requests, none shorter than its app's sleep."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from cli_runs import run_cli
from gunicorn_by_hand import gunicorn_by_hand
from test_attached_listener_queues_model import attached

from accept_order.experiments.latency.model_check import predict
from accept_order.experiments.latency.model_report import model_report
from accept_order.probes.accept_counts import gap_sample
from accept_order.probes.accept_program import program
from accept_order.probes.bpftrace_readings import gap_us, parse_gaps

TIMEOUT_S = 30.0
SLEEP_MS = 2
# The model draws from the gaps only where 50 busy looks or more (analysis/busy_choice.MIN_BUSY_LOOKS) say the workers
# slept while serving. The looks are a thread of the tool's process, every 5 ms, starved on a loaded machine: 600
# connections read 260-350 calm, but beside six CPU hogs, two other such runs and a host of 130,000 TIME_WAIT sockets
# (a suite's) one run in 12 read 45 over a 4.6-s span, and the model took their CPU, not the gaps; 2,000 read 54-83
# so (9 runs). 3,000 give the looks five times the run's time.
CONNECTIONS = 3000
APP = f"""
import time


def app(environ, start_response):
    time.sleep({SLEEP_MS / 1000})
    start_response("200 OK", [("Content-Length", "3")])
    return [b"ok\\n"]
"""


def test_the_end_block_carries_the_gaps_by_bucket() -> None:
    text = program([12])
    assert "sys_enter_accept4" in text and "@took[tid] = nsecs" in text and "@gap[$k] = count()" in text, text
    out = (
        b"accept-order counts begin\n@[12]: 30\n\naccept-order empty accepts\n\naccept-order accept gaps\n"
        b"@gap[114]: 25\n@gap[5]: 4\n\naccept-order counts end\n"
    )
    assert parse_gaps(out) == {114: 25, 5: 4}
    assert parse_gaps(out.replace(b"accept-order accept gaps\n", b"")) is None  # another program's: not counted
    # each bucket's middle: 10 µs wide under 1 ms, 100 under 10 ms, 1 ms under 100 ms, 10 ms up to 1 s
    assert [gap_us(k) for k in (0, 99, 100, 114, 189, 190, 279, 280, 369)] == [
        5,
        995,
        1050,
        2450,
        9950,
        10500,
        99500,
        105000,
        995000,
    ]
    sample, count = gap_sample({"accept_counts": {"available": True, "gaps": {"114": 300, "5": 100}}}, 8)
    assert count == 400 and sample == [55.0, 55.0] + [2450.0] * 6, sample


def _sleeping(gaps: dict[str, int], empty: int = 0, program: str = "gunicorn", threads: int = 1) -> Any:
    """1,000 connections to 4 attached workers of `program` (inspect's name), `threads` each, found asleep while
    serving in 2/3 of their busy looks (the busy time: 6 ms a connection), the kernel's accepts counted with `empty`
    of them empty and `gaps` by bucket."""
    plain = attached(None, rows=1)
    worker = {"threads": threads, "looks": 400, "idle": 100, "waits": {"clock_nanosleep": 200}}
    looks = {"span_s": 2.0, "workers": [{"pid": 4243 + i, **worker} for i in range(4)]}
    kernel = {"available": True, "why": "bpftrace", "counts": {"4243": 1000}, "empty": {"4243": empty}, "gaps": gaps}
    named = {"pid": 4242, "name": program, "recognised": program}
    return replace(plain, evidence={**plain.evidence, "busy_waits": looks, "accept_counts": kernel, "program": named})


def test_one_at_a_time_workers_are_modelled_on_each_connections_gap() -> None:
    """800 connections of 2.45 ms and 200 of 20.5 (mean 6.06 ms, the busy looks' 6): the model's p99 is among the
    long ones; on the busy mean every connection waits the same."""
    spread = _sleeping({"114": 800, "200": 200})
    model = predict(spread)
    assert model is not None and model.service_source == "busy" and model.service_gaps == 1000, model
    assert model.batch == 1 and model.service_mean_ms == pytest.approx(0.8 * 2.45 + 0.2 * 20.5), model
    assert model.p99_ms > 1.5 * model.p50_ms, model
    lines = [str(getattr(part, "plain", "")) for part in model_report([replace(spread, model=model)])]
    said = "each connection's drawn from the 1,000 gaps the kernel timed between a worker's accept and its next"
    assert any(said in line for line in lines), lines
    # not where the workers may take several a wakeup (as many empty as taking all makes: 63), nor from gaps for under
    # half the connections, nor from gaps whose mean (here 8.77 ms) is not the busy time's (6 ms) within 1.25 times
    unused = ({"114": 800, "200": 200}, 63), ({"114": 400, "200": 99}, 0), ({"114": 650, "200": 350}, 0)
    for gaps, empty in unused:
        mean = predict(_sleeping(gaps, empty))
        assert mean is not None and mean.service_gaps is None and mean.service_mean_ms == pytest.approx(6.0), mean


@pytest.mark.parametrize(
    ("program", "threads"), [("nginx", 1), ("lighttpd", 1), ("gunicorn", 4), ("no-such-program", 1)]
)
def test_gaps_are_a_connections_time_only_where_a_worker_serves_one_at_a_time(program: str, threads: int) -> None:
    """An event loop's gap between accepts is a turn of its loop, each connection served across many (nginx, lighttpd);
    a worker of several threads is a pool (gunicorn's gthread); a program not named is not known: none empty reads
    one a wakeup there as before, but the busy time's mean stands, not the gaps."""
    mean = predict(_sleeping({"114": 800, "200": 200}, program=program, threads=threads))
    assert mean is not None and mean.batch == 1 and mean.service_source == "busy", mean
    assert mean.service_gaps is None and mean.service_mean_ms == pytest.approx(6.0), mean


def test_an_attached_gunicorns_gaps_are_its_requests(tmp_path: Path) -> None:
    """PyPI's gunicorn, 3 sync workers whose app sleeps 2 ms, CONNECTIONS 12 at once: the kernel timed a gap for
    each request its access log holds, none shorter than the sleep, and the model drew from them."""
    if os.geteuid() != 0 or shutil.which("bpftrace") is None:
        pytest.skip("counting accepts in the kernel needs root and bpftrace")
    out = tmp_path / "latency.json"
    with gunicorn_by_hand(APP, tmp_path, 3, TIMEOUT_S, "--access-logformat", "%(D)s") as gunicorn:
        args = ["latency", "--attach", str(gunicorn.master), "--port", str(gunicorn.port), "--protocol", "http"]
        result = run_cli([*args, "-n", str(CONNECTIONS), "-c", "12", "--json", str(out)], columns=400)
        assert result.exit_code == 0, result.output
        times_us = sorted(int(line) for line in gunicorn.access_log.read_text().split())
    doc = json.loads(out.read_text())
    kernel = doc["evidence"]["accept_counts"]
    if not kernel["available"]:
        pytest.skip(f"the kernel's accept counts were not available: {kernel['why']}")
    gaps = sorted(gap_us(int(k)) for k, n in kernel["gaps"].items() for _ in range(n))
    # a worker's last gap ends at its next accept call, which a loaded machine may hold past the counter's stop
    assert len(times_us) == CONNECTIONS and CONNECTIONS - 3 <= len(gaps) <= CONNECTIONS, (len(gaps), len(times_us))
    assert gaps[0] >= SLEEP_MS * 1000 - 100, gaps[:5]  # the bucket's middle is within 50 µs of the gap
    # each gap holds a request's time in the app and more (reading it, writing the reply, closing), so rank for rank
    # too (of all the requests: any fewer gaps rank no lower); within half a bucket (50 µs under 10 ms, 500 under 100)
    pairs = list(zip(gaps, times_us, strict=False))
    assert all(g * 1.05 + 50 >= t for g, t in pairs), [(g, t) for g, t in pairs if g * 1.05 + 50 < t][:5]
    model = doc["model"]
    assert model["service_source"] == "busy" and model["service_gaps"] == len(gaps), model
    assert model["p99_ms"] > model["p50_ms"], model  # each its own: on one mean, one at a time, all would wait alike
