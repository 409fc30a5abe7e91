"""observe's parts that need no server: the bpftrace program and how its output is read, the verdict in
the user's terms, the live view and the plain line within 80 columns, intervals joined, files checked."""

from __future__ import annotations

import dataclasses
import io
import re

import pytest
from observe_result_made import result
from rich.console import Console

from accept_order.core.errors import ResultFileError
from accept_order.experiments.documents import render_document
from accept_order.experiments.observe.report import interval_line, live_view, observe_report
from accept_order.experiments.observe.result import (
    ObservedMechanism,
    ObserveInterval,
    ObserveResult,
)
from accept_order.experiments.observe.verdict import headline, mechanism, queue, verdict
from accept_order.probes.accept_watch import AcceptWatch, watch_program


def test_the_program_counts_per_thread_what_accept_returned() -> None:
    program = watch_program([7, 8])
    assert "(args->ret >= 0 || args->ret == -11) && (pid == 7 || pid == 8)" in program
    assert "@ok[pid, tid] = count()" in program and "@empty[pid, tid] = count()" in program
    assert "interval:ms:" in program and "END {" in program


def test_running_totals_are_the_latest_print_of_each_thread() -> None:
    watch = AcceptWatch([7])
    watch._out += b"@ok[7, 7]: 3\n@ok[7, 9]: 1\n@empty[7, 9]: 2\n\n@ok[7, 7]: 5\n@ok[7, 9]: 1\n@ok[7, 7]: 6"
    totals = watch._parse()  # the line still being printed ("@ok[7, 7]: 6") waits for its newline
    assert totals.accepted == {(7, 7): 5, (7, 9): 1} and totals.empty == {(7, 9): 2}
    assert totals.of(7) == (6, 2) and totals.of(7, 9) == (1, 2) and totals.of(8) == (0, 0)
    watch._out += b"\n"
    assert watch._parse().of(7, 7) == (6, 0)


@pytest.mark.parametrize(
    ("counts", "traced", "expected"),
    [
        ([71, 20, 9], True, "worker 0 (pid 100) took 71% of 100 connections; an even share is 33%"),
        ([40, 60, 0], True, "worker 1 (pid 101) took 60% of 100 connections; an even share is 33%; worker 2 took none"),
        ([34, 33, 33], True, "the 3 workers shared 100 connections evenly: 33% to 34% each"),
        ([0, 0], True, "no connection was accepted in 30.0 s"),
        ([5], True, "its one worker (pid 100) took all 5 connections"),
        ([8, 2], False, "worker 0 (pid 100) took about 80% of 10 connections seen (sampled)"),
    ],
)
def test_headline_in_the_users_terms(counts: list[int], traced: bool, expected: str) -> None:
    assert headline(result(counts, traced)).startswith(expected)


def test_a_split_is_called_even_only_when_an_even_split_gives_it() -> None:
    """The issue's 4 workers, 24,706 connections, 10% to 36% each (max/min 3.63): no busiest worker took 1.5
    times an even share, but an even split spreads them so unevenly less than once in a million times."""
    uneven = headline(result([2470, 8966, 6635, 6635]))
    assert uneven == (
        "the 4 workers shared 24,706 connections unevenly: 10% to 36% each (chi-square test: an even split "
        "spreads them at least this unevenly less than once in a million times)"
    )
    assert headline(result([34, 33, 33])) == (
        "the 3 workers shared 100 connections evenly: 33% to 34% each (exact multinomial test: an even split "
        "spreads them at least this unevenly more often than not)"
    )
    # A busiest worker on few connections: said, with how often an even split does as much.
    assert headline(result([8, 2], traced=False)).endswith(
        "(as uneven as chance: exact multinomial test: an even split spreads them at least this unevenly 1 time in 9)"
    )
    assert "chance" not in headline(result([71, 20, 9]))


def test_a_threaded_server_without_tracing_is_judged_by_cpu() -> None:
    threads = result([0, 0], traced=False, tid=True)
    threads = dataclasses.replace(
        threads, workers=(dataclasses.replace(threads.workers[0], cpu_s=3.0), threads.workers[1])
    )
    assert threads.counts is None
    line = headline(threads)
    assert "by CPU, worker 0 (thread 200) used 86% of the CPU time the workers used (3.00 of 3.50 s in" in line


def test_the_mechanism_is_said_when_known_and_not_guessed_when_not() -> None:
    assert mechanism(result([1, 1])) == ["mechanism: not known (inspect could not name it from /proc)"]
    seen = ObservedMechanism("reuseport", "the kernel hashes the 4-tuple", ("reuseport",), ("a BPF program",))
    assert mechanism(result([1, 1], mechanism=seen)) == [
        "mechanism, read by inspect: reuseport (the server's mode reuseport): the kernel hashes the 4-tuple",
        "not visible in /proc: a BPF program",
    ]


def test_overflows_and_empty_accepts_are_said() -> None:
    herd = result([10, 10], counters={"TcpExtListenOverflows": 4})
    herd = dataclasses.replace(herd, workers=tuple(dataclasses.replace(w, empty=15) for w in herd.workers))
    lines = "\n".join(verdict(herd))
    assert "30 accepts came back empty (EAGAIN, 1.50 per connection)" in lines
    assert "4 handshake packets met a full listen queue" in lines


def test_the_workers_kept_up_is_said_only_from_enough_samples_of_an_empty_queue() -> None:
    def empty(counts: list[int], samples: int) -> ObserveResult:
        return result(counts, queue_samples=samples, queue_max=0, queue_mean=0.0, wall_s=6.0)

    assert queue(empty([5, 5], 1)) == (
        "listen queue: empty at the one sample taken in 6.0 s: too few to tell whether the workers kept up"
    )
    many = "listen queue: empty at each of 60 samples, one every 0.1 s over 6.0 s"
    assert queue(empty([5, 5], 60)) == f"{many}: the workers kept up"
    assert queue(empty([0, 0], 60)) == many  # nothing accepted: nothing to keep up with
    untraced = dataclasses.replace(empty([0, 0], 60), traced=False)
    assert queue(untraced) == many  # nor when the connections were seen without tracing
    assert (
        queue(result([5, 5], queue_samples=1)) == "listen queue: at most 3 waiting, 0.5 on average (1 sample in 30.0 s)"
    )


def test_an_interval_line_says_what_its_queue_figure_is() -> None:
    line = interval_line(result([3, 1]))
    assert "max queue 3" in line and "<=" not in line


def rendered(renderable: object, width: int = 80) -> list[str]:
    console = Console(width=width, file=io.StringIO(), record=True)
    console.print(renderable)
    return console.export_text().splitlines()


@pytest.mark.parametrize("workers", [1, 3, 8, 40])
def test_the_views_fit_80_columns(workers: int) -> None:
    busy = result([1000 * (i + 1) for i in range(workers)], tid=workers == 40)
    for lines in (rendered(live_view(busy)), rendered(observe_report(busy)), [interval_line(busy)]):
        assert max(len(line) for line in lines) <= 80, lines
    if workers == 40:
        assert interval_line(busy).endswith("more")


def test_cpu_is_one_unit_live_and_in_the_report() -> None:
    """Each worker used 0.5 s of CPU in 30 s (2% of a CPU), and 10% of a CPU in the last interval: the live
    view and the report both say %CPU, in percent (the report's seconds beside the live view's percent were
    two units under one heading)."""
    two = result([3, 1])

    def cpu_column(lines: list[str]) -> list[str]:
        header = next(line for line in lines if "%CPU" in line)
        at = header.index("%CPU")
        return [line[at - 2 : at + 4].strip() for line in lines[lines.index(header) + 2 :] if line.strip()]

    assert cpu_column(rendered(live_view(two)))[:2] == ["10%", "10%"]
    assert cpu_column(rendered(observe_report(two)))[:3] == ["2%", "2%", "3%"]  # 2 workers, and the total
    assert not [line for line in rendered(observe_report(two)) if re.search(r"\d\.\ds\b", line)]


def test_a_short_last_interval_joins_the_one_before() -> None:
    a = ObserveInterval(1.0, 1.0, (10, 0), (1, 0), (0.5, 0.0), 4, 1.0)
    b = ObserveInterval(1.1, 0.1, (1, 1), (0, 0), (1.0, 1.0), None, None, overflows=2)
    both = a.joined(b)
    assert both.accepts == (11, 1) and both.empty == (1, 0) and both.span_s == 1.1 and both.end_s == 1.1
    assert both.cpu == (round(0.6 / 1.1, 4), round(0.1 / 1.1, 4)) and both.queue_max == 4 and both.overflows == 2


def test_a_file_round_trips_and_a_bad_one_is_one_error() -> None:
    saved = result([3, 4]).to_dict()
    assert ObserveResult.from_dict(saved) == result([3, 4])
    saved["intervals"][0]["accepts"] = [1]
    with pytest.raises(ResultFileError, match="one value per worker"):
        render_document("observe", saved)
