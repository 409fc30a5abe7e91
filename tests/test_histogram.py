"""Tests for accept_order.core.histogram (exact stats + mmhistogram-compatible output)."""

from __future__ import annotations

import json
import math
import random
import statistics

import pytest

from accept_order.core.histogram import LatencyHistogram, histogram_lines, log2_buckets, summary_line


def hist_of(values_us: list[int]) -> LatencyHistogram:
    h = LatencyHistogram()
    for v in values_us:
        h.add(v)
    return h


def mmhistogram_oracle(title: str, values_ms: list[float]) -> list[str]:
    """Independent oracle: naive per-sample re-statement of mmhistogram (defaults: base 2,
    50 columns) from cloudflare/cloudflare-blog 2017-06-29-ssdp/mmhistogram; printf kept on purpose."""
    desc = sorted(values_ms, reverse=True)
    n = len(desc)
    avg = sum(desc) / n
    dev = math.sqrt(sum((m - avg) ** 2 for m in desc) / n)
    med = desc[n // 2]
    rows: list[tuple[int, int]] = []
    pending = sorted(values_ms)
    pos = 0
    i = 0
    while pos < n:
        upper = 2**i
        lower = 0 if i == 0 else 2 ** (i - 1)
        start = pos
        while pos < n and pending[pos] <= upper:
            pos += 1
        rows.append((lower, pos - start))
        i += 1
    width = max(len(str(rows[-1][0])), len("value")) + 1
    maxcount = float(max(c for _, c in rows))
    out = [
        "%s min:%.2f avg:%.2f med=%.2f max:%.2f dev:%.2f count:%d"  # noqa: UP031
        % (title, desc[-1], avg, med, desc[0], dev, n),
        f"{title}:",
        "%*s |%*s %s" % (width, "value", 50, "-" * 50, "count"),  # noqa: UP031
    ]
    for lower, c in rows:
        out.append("%*d |%*s %d" % (width, lower, 50, "*" * int(50 * (c / maxcount)), c))  # noqa: UP031
    return out


def render(title: str, h: LatencyHistogram) -> list[str]:
    return [summary_line(title, h), *histogram_lines(title, h)]


# --- basic stats -----------------------------------------------------------------


def test_empty() -> None:
    h = LatencyHistogram()
    assert h.count == 0 and len(h) == 0 and not h
    assert h.min_us is None and h.max_us is None
    with pytest.raises(ValueError):
        h.percentile(50)
    with pytest.raises(ValueError):
        h.median_us()
    with pytest.raises(ValueError):
        _ = h.mean_us
    with pytest.raises(ValueError):
        _ = h.stdev_us
    assert log2_buckets(h) == []
    assert summary_line("T", h) == "T count:0"
    assert histogram_lines("T", h) == ["T:", " value |" + "-" * 50 + " count"]


def test_known_stats_even_count() -> None:
    # 1, 2, 3, 4 ms: mean 2.5, population variance (2.25+0.25+0.25+2.25)/4 = 1.25
    h = hist_of([1000, 2000, 3000, 4000])
    assert (h.count, h.min_us, h.max_us) == (4, 1000, 4000)
    assert h.mean_us == 2500.0
    assert h.stdev_us == pytest.approx(math.sqrt(1.25) * 1000, rel=1e-15)
    assert h.median_us() == 2000.0  # lower middle, as mmhistogram
    assert summary_line("T", h) == "T min:1.00 avg:2.50 med=2.00 max:4.00 dev:1.12 count:4"


def test_known_stats_odd_count_with_repeats() -> None:
    # 2,2,2,5,9 ms -> mean 4, deviations -2,-2,-2,1,5 -> var (4+4+4+1+25)/5 = 7.6
    h = LatencyHistogram()
    h.add(2000, 3)
    h.add(9000)
    h.add(5000)
    assert h.count == len(h) == 5
    assert h.mean_us == 4000.0
    assert h.stdev_us == pytest.approx(math.sqrt(7.6) * 1000, rel=1e-15)
    assert h.median_us() == 2000.0
    assert summary_line("Duration in ms (x)", h) == (
        "Duration in ms (x) min:2.00 avg:4.00 med=2.00 max:9.00 dev:2.76 count:5"
    )


def test_stdev_is_exact_for_huge_offsets() -> None:
    # Naive float sum-of-squares would lose everything here; integer sums do not.
    base = 10**12
    h = hist_of([base + 1, base + 3])
    assert h.mean_us == base + 2
    assert h.stdev_us == 1.0
    h2 = LatencyHistogram()
    h2.add(123_456, 10**6)
    assert h2.stdev_us == 0.0


def test_summary_matches_statistics_module() -> None:
    rng = random.Random(7)
    values = [rng.randrange(0, 200_000) for _ in range(5001)]
    h = hist_of(values)
    assert h.mean_us == pytest.approx(statistics.fmean(values), rel=1e-12)
    assert h.stdev_us == pytest.approx(statistics.pstdev(values), rel=1e-12)
    assert h.median_us() == statistics.median_low(values)
    assert h.min_us == min(values) and h.max_us == max(values)


def test_add_rejects_bad_input() -> None:
    h = LatencyHistogram()
    with pytest.raises(ValueError):
        h.add(-1)
    with pytest.raises(ValueError):
        h.add(5, 0)
    assert h.count == 0


# --- percentiles -----------------------------------------------------------------


def test_percentile_single_value() -> None:
    h = hist_of([777])
    for q in (0, 0.001, 50, 99.9, 100):
        assert h.percentile(q) == 777
    assert h.median_us() == 777.0


def test_percentile_two_values() -> None:
    h = hist_of([20, 10])
    assert h.percentile(0) == 10
    assert h.percentile(50) == 10  # rank ceil(0.5*2) = 1
    assert h.percentile(50.0001) == 20
    assert h.percentile(100) == 20
    assert h.median_us() == 10.0


def test_percentile_nearest_rank() -> None:
    h = hist_of(list(range(1, 101)))  # 1..100
    assert h.percentile(0) == 1
    assert h.percentile(1) == 1
    assert h.percentile(1.5) == 2
    assert h.percentile(90) == 90
    assert h.percentile(99) == 99
    assert h.percentile(99.5) == 100
    assert h.percentile(100) == 100
    # q is read as the decimal it prints as: p99.9 of 1000 samples is rank 999, not 1000.
    h1000 = hist_of(list(range(1, 1001)))
    assert h1000.percentile(99.9) == 999
    assert h1000.percentile(99.95) == 1000


def test_percentile_with_repeated_values() -> None:
    h = LatencyHistogram()
    h.add(5, 90)
    h.add(500, 10)
    assert h.percentile(90) == 5
    assert h.percentile(90.01) == 500
    assert h.percentile(50) == 5


@pytest.mark.parametrize("q", [-0.1, 100.1, float("nan")])
def test_percentile_range(q: float) -> None:
    with pytest.raises(ValueError):
        hist_of([1]).percentile(q)


def test_percentile_sees_later_adds() -> None:
    h = hist_of([10, 20])
    assert h.percentile(100) == 20
    h.add(30)
    assert h.percentile(100) == 30
    assert h.max_us == 30
    h.merge(hist_of([1]))
    assert h.min_us == 1 and h.percentile(0) == 1


# --- merge / serialisation -------------------------------------------------------


def test_merge_equals_adding_all() -> None:
    rng = random.Random(1)
    parts = [[rng.randrange(0, 50_000) for _ in range(2000)] for _ in range(3)]
    merged = LatencyHistogram()
    for p in parts:
        merged.merge(hist_of(p))
    everything = hist_of([v for p in parts for v in p])
    assert merged == everything
    assert merged.to_dict() == everything.to_dict()
    assert (merged.count, merged.mean_us, merged.stdev_us) == (
        everything.count,
        everything.mean_us,
        everything.stdev_us,
    )
    assert merged.percentile(99) == everything.percentile(99)
    assert render("M", merged) == render("M", everything)


def test_merge_with_self_doubles() -> None:
    h = hist_of([1, 2, 2])
    h.merge(h)
    assert h.to_dict()["counts"] == [[1, 2], [2, 4]]
    assert h.count == 6


def test_json_round_trip() -> None:
    h = LatencyHistogram()
    h.add(3000, 2)
    h.add(15)
    h.add(0)
    d = h.to_dict()
    assert d == {"unit": "us", "counts": [[0, 1], [15, 1], [3000, 2]]}
    back = LatencyHistogram.from_dict(json.loads(json.dumps(d)))
    assert back == h
    assert back.count == h.count and back.stdev_us == h.stdev_us
    assert LatencyHistogram.from_dict(LatencyHistogram().to_dict()) == LatencyHistogram()


@pytest.mark.parametrize(
    "bad",
    [
        {"unit": "ms", "counts": []},
        {"counts": []},
        {"unit": "us", "counts": [[1]]},
        {"unit": "us", "counts": [[1, 0]]},
        {"unit": "us", "counts": [[-1, 1]]},
        {"unit": "us", "counts": [[1.5, 1]]},
        {"unit": "us", "counts": [[1, True]]},
        {"unit": "us", "counts": "nope"},
    ],
)
def test_from_dict_rejects(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        LatencyHistogram.from_dict(bad)


def test_eq() -> None:
    assert hist_of([1, 2]) == hist_of([2, 1])
    assert hist_of([1, 2]) != hist_of([1, 2, 2])
    assert hist_of([1]) != {"unit": "us", "counts": [[1, 1]]}


# --- mmhistogram buckets ---------------------------------------------------------


@pytest.mark.parametrize(
    ("us", "edge_ms"),
    [
        (0, 0),
        (1, 0),
        (999, 0),
        (1000, 0),  # exactly 1.0 ms: bound 1 >= 1.0, so bucket 0
        (1001, 1),
        (1999, 1),
        (2000, 1),  # exactly 2.0 ms is still in bucket "1" (1, 2]
        (2001, 2),
        (4000, 2),
        (4001, 4),
        (64_000, 32),
        (64_001, 64),
        (1_024_000, 512),
        (1_024_001, 1024),
    ],
)
def test_bucket_edges(us: int, edge_ms: int) -> None:
    buckets = log2_buckets(hist_of([us]))
    assert buckets[-1] == (edge_ms, 1)
    assert all(c == 0 for _, c in buckets[:-1])
    # every bucket from 0 up to the last non-empty one is listed
    assert [e for e, _ in buckets] == [0] + [2**i for i in range(len(buckets) - 1)]


def test_buckets_start_at_zero_even_if_empty() -> None:
    assert log2_buckets(hist_of([70_000])) == [
        (0, 0), (1, 0), (2, 0), (4, 0), (8, 0), (16, 0), (32, 0), (64, 1),
    ]  # fmt: skip


SHARED_QUEUE = """\
Duration in ms (shared queue):
 value |-------------------------------------------------- count
     0 |                                                   0
     1 |                                                   0
     2 |                                                   1
     4 |                                                   16
     8 |                                                   67
    16 |************************************************** 91760
    32 |                                              **** 8155
    64 |                                                   1"""

MULTIPLE_QUEUES = """\
Duration in ms (multiple queues):
 value |-------------------------------------------------- count
     0 |                                                   0
     1 |                                                 * 1023
     2 |                                         ********* 5321
     4 |                                 ***************** 9986
     8 |                  ******************************** 18443
    16 |    ********************************************** 25852
    32 |************************************************** 27949
    64 |                              ******************** 11368
   128 |                                                   58"""

# Real mmhistogram output on integer-ms input (a pdns RTT log quoted in a blog post);
# shows bucket 0 holding 0 and 1 ms, truncation (3.67 -> 3 stars) and 17 rows.
PDNS = """\
Values:
 value |-------------------------------------------------- count
     0 |                                                   1087
     1 |                                                   97
     2 |                                                   297
     4 |                                                   955
     8 |************************************************** 1503390
    16 |                    ****************************** 908123
    32 |                                               *** 110458
    64 |                                         ********* 287174
   128 |                                                 * 52383
   256 |                                                   28575
   512 |                                                   6807
  1024 |                                                   5729
  2048 |                                                   3534
  4096 |                                                   2191
  8192 |                                                   1430
 16384 |                                                   713
 32768 |                                                   14"""


def hist_from_reference(text: str) -> tuple[str, LatencyHistogram]:
    """Rebuild a histogram from reference rows, putting each count inside its bucket."""
    lines = text.splitlines()
    title = lines[0].removesuffix(":")
    h = LatencyHistogram()
    for row in lines[2:]:
        edge = int(row.split("|")[0])
        count = int(row.rsplit(" ", 1)[1])
        if count:
            # 0.5 ms for bucket 0, 1.5 * edge otherwise: strictly inside (edge, 2*edge]
            h.add(500 if edge == 0 else edge * 1500, count)
    return title, h


@pytest.mark.parametrize("reference", [SHARED_QUEUE, MULTIPLE_QUEUES, PDNS])
def test_rows_match_reference_output(reference: str) -> None:
    title, h = hist_from_reference(reference)
    assert histogram_lines(title, h) == reference.splitlines()


def test_reference_buckets_exactly_on_upper_edges() -> None:
    # Same counts placed exactly on each bucket's inclusive upper edge (1, 2, 4, ... ms).
    _, inside = hist_from_reference(MULTIPLE_QUEUES)
    on_edge = LatencyHistogram()
    for edge, c in log2_buckets(inside):
        if c:
            on_edge.add(1000 if edge == 0 else edge * 2000, c)
    assert histogram_lines("Duration in ms (multiple queues)", on_edge) == MULTIPLE_QUEUES.splitlines()


def test_wide_value_column() -> None:
    # Last lower edge 131072 has 6 digits > len("value"), so the column grows to 7.
    h = hist_of([500, 200_000_000])
    lines = histogram_lines("W", h)
    assert lines[1] == "  value |" + "-" * 50 + " count"
    assert lines[2] == "      0 |" + "*" * 50 + " 1"
    assert lines[-1] == " 131072 |" + "*" * 50 + " 1"
    assert len(lines) == 2 + 19  # buckets 0, 1, 2, ..., 131072


def test_small_layout_by_hand() -> None:
    h = hist_of([1000, 2000, 3000, 4000])
    assert histogram_lines("T", h) == [
        "T:",
        " value |-------------------------------------------------- count",
        "     0 |" + " " * 25 + "*" * 25 + " 1",
        "     1 |" + " " * 25 + "*" * 25 + " 1",
        "     2 |" + "*" * 50 + " 2",
    ]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_matches_mmhistogram_algorithm_on_random_data(seed: int) -> None:
    rng = random.Random(seed)
    # log-normal around ~20 ms with a long tail, including sub-ms values and exact edges
    values = [int(rng.lognormvariate(math.log(20_000), 1.2)) for _ in range(20_000)]
    values += [0, 1000, 2000, 4000, 8000]
    h = hist_of(values)
    assert render("Duration in ms (r)", h) == mmhistogram_oracle("Duration in ms (r)", [v / 1000 for v in values])


# --- many distinct values (speed is measured in benchmarks/, not asserted here) -------------


def test_many_distinct_values_merge_and_render() -> None:
    a, b = LatencyHistogram(), LatencyHistogram()
    for v in range(0, 100_000, 2):  # 1e5 distinct values once merged
        a.add(v)
        b.add(v + 1, 3)
    a.merge(b)
    lines = histogram_lines("P", a)
    summary_line("P", a)
    a.percentile(99.9)
    LatencyHistogram.from_dict(json.loads(json.dumps(a.to_dict())))
    assert len(a.to_dict()["counts"]) == 100_000
    assert lines[-1].startswith("    64 |")
