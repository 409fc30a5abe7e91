"""A p99 of fewer than MIN_JUDGED measurements that reads far above its prediction is judged above it: 'latency
--server nginx -w 2 --duration 50ms -c 4' (Debian's nginx, load 4, Linux 6.18, 2 CPUs) measured 425 connections,
p99 4.24 ms against 0.19 predicted (22.55x), and the model said 'too few connections to judge', the odds it gave
those of a p99 reading *below* the true one, which would put this one further above. From 100 measurements on the
p99 rests on several of them, and the chance that so few read that far above the band's edge is computed (an
exponential tail, as the floor's odds); under 100 it is the slowest one alone, a single stall, still not judged."""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction
from pathlib import Path

from test_small_sentences_model import run_of

from accept_order.analysis.model_check import MIN_JUDGED, TOLERANCE, clearly_above, p99_read_high, p99_read_low
from accept_order.experiments.latency.model_verdict import model_line, queueing_explains
from accept_order.experiments.latency.result import LatencyResult

FILE = Path(__file__).parent / "data" / "latency_nginx_short_far_above.json"  # the run above, its file


def exact_p99_read_high(n: int, factor: float) -> float:
    """P(fewer than ceil(0.99 n) of n fall below factor x the true p99), in rational arithmetic."""
    below = Fraction(1 - 100 ** (-factor))
    rank = math.ceil(0.99 * n)
    return float(sum(math.comb(n, k) * below**k * (1 - below) ** (n - k) for k in range(rank)))


def test_the_odds_are_the_binomial_sum_on_the_other_side() -> None:
    for n, factor in ((100, 1.1), (150, 1.5), (425, 1.2), (499, 2.0)):
        assert math.isclose(p99_read_high(n, factor), exact_p99_read_high(n, factor), rel_tol=1e-9), (n, factor)
    assert p99_read_high(425, 1.0) > 0.3 and p99_read_high(425, 1.0 + 1e-9) < p99_read_high(425, 1.0)
    assert p99_read_high(425, 20.0) == 0.0


def test_a_short_run_far_above_is_judged() -> None:
    run = LatencyResult.from_dict(json.loads(FILE.read_text()))
    assert run.histogram.count == 425 < MIN_JUDGED
    line = model_line([run]) or ""
    assert "too few" not in line, line
    assert (
        "above what queueing predicts by more than a factor of 1.25 (425 connections, under the 500 that judge a p99 "
        "either way, but from so few a p99 reads 18.0× the band's edge (1.25× the predicted) where that is the true "
        "one in under 0.01% of runs, even where a stall slows all 4 clients' connections at once): something else is "
        "at work" in line
    ), line


def test_near_the_band_or_a_single_stall_is_still_too_few() -> None:
    edge = clearly_above(425, 1.1 * TOLERANCE, 1.0)  # 1.1x the band's edge: read so high too often
    assert edge is None and p99_read_high(425, 1.1) > p99_read_low(MIN_JUDGED)
    assert clearly_above(99, 10.0, 1.0) is None  # the slowest of 99: one stall
    assert clearly_above(MIN_JUDGED, 10.0, 1.0) is None  # judged as every run of the floor's size is
    stalled = [2000] * 380 + [9000] * 20  # 400 connections, 5% at 9 ms: p99 4.5x the 2.01 ms predicted
    line = model_line([run_of("blocking", stalled)]) or ""
    assert "too few" not in line and "something else is at work" in line, line
    assert queueing_explains([run_of("blocking", stalled), run_of("reuseport", stalled)]) is False
    assert "too few" in (model_line([run_of("blocking", [2000] * 4 + [9000])]) or "")  # 5: the slowest one


def test_a_stall_of_every_client_is_one_draw() -> None:
    """A closed loop's 4 clients each have a connection in flight, and one stall of the host slows all 4: the p99 of
    200 (its 3 slowest above it) may be one stall's, so it stays too few; and runs whose clients stalled together
    call 'far above' no more often than the floor's odds. Counted as independent draws they did in 4.7% of runs
    of 425 (simulated), the odds saying 1.34%."""
    line = model_line([run_of("blocking", [2000] * 190 + [9000] * 10)]) or ""  # 200, 5% at 9 ms: 4.5x
    assert "too few connections to judge (200 measured)" in line, line
    assert clearly_above(200, 9.0, 2.0, 4) is None and clearly_above(200, 9.0, 2.0, 1) is not None
    assert clearly_above(425, 9.0, 2.0, None) is None  # an open loop: no bound on how many one stall slows
    draws = random.Random(7)
    n, clients, runs, called = 425, 4, 4000, 0
    for _ in range(runs):  # true p99 at the band's edge, each draw slowing 4 clients' connections together
        stalls = [draws.expovariate(1.0) * TOLERANCE / math.log(100) for _ in range(math.ceil(n / clients))]
        measured = sorted(x for x in stalls for _ in range(clients))[:n]
        called += clearly_above(n, measured[math.ceil(0.99 * n) - 1], 1.0, clients) is not None
    assert called / runs <= p99_read_low(MIN_JUDGED) + 3 * math.sqrt(0.0134 * 0.9866 / runs), called


def test_too_few_above_the_band_says_one_stall_can_make_it() -> None:
    """A run too few to judge whose p99 is far above: the odds it quoted are of reading below the truth, which say
    nothing of a run read above it; why it is not judged above is that one stall of its clients can make its p99
    ('latency --server nginx -w 2 --duration 50ms -c 4': 325 connections, 4.68x, its p99 the 4th slowest)."""
    line = model_line([run_of("blocking", [2000] * 190 + [9000] * 10)]) or ""
    assert line.endswith(
        "; its p99, above the band, rests on its 3 slowest, which one stall can make (it slows all 4 clients' "
        "connections in flight at once)"
    ), line
    within = model_line([run_of("blocking", [2000] * 190 + [2400] * 10)]) or ""  # 1.19x: within the band
    assert "one stall" not in within, within
