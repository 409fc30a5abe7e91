"""Each kept connection's first request apart from its later ones (loads/kept_tally.py, experiments/latency/
first_requests.py).

A keepalive tester's nginx 1.22 (4 workers, multi_accept off, 100 connections opened at once, load ~9 on 2 vCPUs):
the worker holding 36 of them answered their first requests in a staircase from 1.2 to 6.5 s, one accepted per
event-loop turn (p99 4,024 and 920 ms in two runs, 516 and 568 ms with multi_accept on); the report mixed those first
requests with the steady state's, so the tail read as the server's.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from conftest import run_cli
from nginx_by_hand import nginx_by_hand, one_server_conf
from test_attach_h2c_port import ATTACH, TIMEOUT_S
from test_small_sentences_held_nothing import pool_run

from accept_order.core.first_requests import FirstRequests
from accept_order.core.histogram import LatencyHistogram
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.experiments.latency.first_requests import cure_for_fill, fill_verdict, first_csv, first_parts
from accept_order.experiments.latency.kept_compare import kept_compare_parts, kept_repeat_table
from accept_order.experiments.latency.result import LatencyResult
from accept_order.loads.kept_tally import KeptTally

OLD_POOL = Path(__file__).parent / "data" / "first_hour_5_nginx_pool.json"
NGINX = one_server_conf(
    "$pid $connection $connection_requests $request_time", http=["keepalive_requests 100000;"], connections=512
)


def test_the_tally_keeps_each_connections_first_reply_apart() -> None:
    tally = KeptTally()
    tally.reply(0, 5000, first=True)
    tally.reply(0, 100, first=False)
    tally.reply(0, 100, first=False)
    tally.reply(1, 7000, first=True)
    report = tally.report()
    assert report["first_counts"] == {0: [(5000, 1)], 1: [(7000, 1)]}
    assert sorted(report["worker_counts"][0]) == [(100, 2), (5000, 1)]  # every request still in its worker's
    assert sorted(report["counts"]) == [(100, 2), (5000, 1), (7000, 1)]
    assert report["served"] == {0: 3, 1: 1} and report["connections"] == {0: 1, 1: 1}


def test_a_holder_found_after_the_fill_takes_over_its_connections_first_reply() -> None:
    tally = KeptTally()
    tally.reply(-1, 5000, first=True)  # replies that name no worker: counted as -1
    tally.reply(-1, 6000, first=True)
    tally.place(5000, 1)  # the first connection's holder: worker 1
    tally.reply(1, 100, first=False)
    report = tally.report()
    assert report["first_counts"] == {-1: [(6000, 1)], 1: [(5000, 1)]}
    assert sorted(report["worker_counts"][1]) == [(100, 1), (5000, 1)]
    assert report["served"] == {-1: 1, 1: 2} and report["connections"] == {-1: 1, 1: 1}


def _with_fill(result: LatencyResult, first_us: int, firsts_per_worker: int) -> LatencyResult:
    """`result` with each worker's first `firsts_per_worker` requests taking `first_us` (the rest as they were)."""
    workers, every = [], LatencyHistogram()
    histogram = LatencyHistogram()
    for h in result.worker_histograms:
        firsts = LatencyHistogram()
        firsts.add(first_us, firsts_per_worker)
        rest = LatencyHistogram()
        rest.add(1000, h.count - firsts_per_worker)
        mine = LatencyHistogram()
        mine.merge(firsts)
        mine.merge(rest)
        workers.append(firsts)
        every.merge(firsts)
        histogram.merge(mine)
    return dataclasses.replace(
        result,
        histogram=histogram,
        worker_histograms=tuple(h for h in (_sum(f, result, i) for i, f in enumerate(workers))),
        first_requests=FirstRequests(every, tuple(workers)),
    )


def _sum(firsts: LatencyHistogram, result: LatencyResult, index: int) -> LatencyHistogram:
    h = LatencyHistogram()
    h.merge(firsts)
    h.add(1000, result.worker_histograms[index].count - firsts.count)
    return h


def _kept(per_connection: int, pool: bool, batch: int = 1) -> LatencyResult:
    """Four nginx workers holding 36/30/20/14 connections opened at once (or a pool), 100 requests each."""
    base = pool_run("epoll", (36, 30, 20, 14), 3000, per_connection=per_connection)
    each = []
    for n in base.served:
        h = LatencyHistogram()
        h.add(1000, n)
        each.append(h)
    server = ServerSpec(kind="nginx", mode="epoll", workers=4, accept_batch=batch).validated()
    load = ConcurrentLoad(connections=10_000, concurrency=100, requests_per_connection=per_connection, pool=pool)
    return dataclasses.replace(
        base, server=server, load=load, worker_histograms=tuple(each), pool=(100, 100) if pool else None
    )


def test_a_tail_of_first_requests_is_the_fill_and_names_the_accept_batch_only_where_it_applies() -> None:
    opened_at_once = _with_fill(_kept(0, pool=False), 4_000_000, 25)  # 100 first requests of 10,000 at 4 s
    said = fill_verdict(opened_at_once)
    assert said is not None and said.startswith(
        "The tail is the fill, not the steady state: 100 of the 100 slowest requests (1% of all, 4000.00 ms and "
        "more) were connections' first requests"
    ), said
    assert "the 9,900 later ones' p99 is 1.00 ms" in said and "(beyond chance)" in said, said
    assert "--accept-batch 0" in said and "took at most 1 per wakeup" in said, said
    # multi_accept already on (accept-batch 0): no cure to name; a pool filled one at a time never queued
    assert (
        cure_for_fill(dataclasses.replace(opened_at_once, server=opened_at_once.server.replace(accept_batch=0))) is None
    )
    pooled = _with_fill(_kept(0, pool=True), 4_000_000, 25)
    said = fill_verdict(pooled) or ""
    assert said.startswith("The tail is the fill") and "--accept-batch" not in said, said
    assert "one after another, each once the one before was answered" in said, said
    reopened = dataclasses.replace(pooled, connections=(72, 60, 40, 28))  # the server closed each once: 200 for 100
    assert "The connections were opened again together in place of closed ones" in (cure_for_fill(reopened) or "")
    # opened one by one as others closed after 10 requests each: not a queue the batch made
    assert cure_for_fill(_with_fill(_kept(10, pool=False), 4_000_000, 25)) is None


def test_a_tail_of_later_requests_is_the_steady_state() -> None:
    slow_later = _with_fill(_kept(0, pool=False), 500, 25)
    h = LatencyHistogram()  # the later requests' tail: 200 at 9 ms in place of 1 ms ones
    h.merge(slow_later.histogram)
    steady = LatencyHistogram()
    for us, n in h.to_dict()["counts"]:
        steady.add(us, n - 200 if us == 1000 else n)
    steady.add(9000, 200)
    said = fill_verdict(dataclasses.replace(slow_later, histogram=steady)) or ""
    assert said.startswith("The tail is the steady state, not the fill: 0 of the"), said
    assert "How sure: counted over this run's 10,000 requests, not estimated" in said, said


def test_an_older_file_without_first_requests_says_they_are_not_known() -> None:
    old = _kept(0, pool=False)  # first_requests None: as a file from before they were kept apart reads
    assert fill_verdict(old) is None
    assert [str(p) for p in first_parts(old)] == [
        "first requests apart from later ones: not known (the file is from before each connection's first request, "
        "which also waited to be accepted, was kept apart)"
    ]
    assert first_csv([old.to_dict()]).splitlines()[1] == "nginx epoll,all,no,,,,,,,,"
    shown = run_cli(["show", str(OLD_POOL)])  # a saved nginx pool of 0.x, before first requests were kept apart
    assert shown.exit_code == 0, shown.output
    assert "first requests apart from later ones: not known" in " ".join(shown.stdout.split())
    csv_rows = run_cli(["show", str(OLD_POOL), "--format", "csv", "--table", "first_requests"]).stdout.splitlines()
    assert [row.split(",")[1:] for row in csv_rows[1:]] == [["all", "no", *[""] * 8]], csv_rows


@ATTACH
def test_attached_nginx_first_requests_match_its_access_log(free_port: int, tmp_path: Path) -> None:
    """100 connections opened at once at nginx with multi_accept off: the first requests the client counted are
    nginx's ($connection_requests 1), and the later ones the rest; nginx's own $request_time of a first request
    (from its first byte read) holds none of the wait to be accepted, which the client's does."""
    out = tmp_path / "kept.json"
    with nginx_by_hand(NGINX, free_port, 4, TIMEOUT_S) as nginx:
        result = run_cli(
            [
                *("latency", "--attach", str(nginx.master), "--port", str(free_port), "--protocol", "http"),
                *("-c", "100", "--requests-per-connection", "0", "-n", "3000", "--json", str(out)),
                *("--timeout", "60s"),  # a busy machine's fill took 6.5 s: no connection given up and opened again
            ]
        )
        logged = [line.split() for line in nginx.access_log.read_text().splitlines()]
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    firsts = LatencyHistogram.from_dict(doc["first_requests"]["every"])
    firsts_logged = [row for row in logged if row[2] == "1"]
    connections = {(pid, number) for pid, number, _, _ in logged}
    assert len(logged) == 3000 and firsts.count == len(firsts_logged) == len(connections) == 100, (firsts, logged)
    csv_rows = run_cli(["show", str(out), "--format", "csv", "--table", "first_requests"]).stdout.splitlines()
    every = csv_rows[-1].split(",")
    assert every[1:4] == ["all", "yes", "100"] and every[7] == "2900", csv_rows
    said = " ".join(result.stdout.split())
    assert "first requests and later ones" in said and "first: each connection's first request, which" in said, said
    assert "The tail is " in said, said
    # nginx's own time of each first request ($request_time: from its first byte read, to the millisecond) is a part
    # of the client's, which also holds the connect and the wait to be accepted
    server_s = sum(float(row[3]) for row in firsts_logged)
    assert firsts.mean_us * firsts.count / 1e6 >= server_s - 0.001 * len(firsts_logged), (firsts, server_s)


def _kept_run(directory: Path, name: str) -> Path:
    """A built-in server's run of 4 connections kept for 25 requests each (8 connections over the run)."""
    out = directory / name
    result = run_cli(
        ["latency", "-w", "2", "-c", "4", "--requests-per-connection", "25", "-n", "200", "--json", str(out)]
    )
    assert result.exit_code == 0, result.output
    return out


def test_merge_adds_first_requests_and_knows_none_where_a_file_did_not_keep_them(tmp_path: Path) -> None:
    a, b = _kept_run(tmp_path, "a.json"), _kept_run(tmp_path, "b.json")
    docs = [json.loads(p.read_text()) for p in (a, b)]
    each = [doc["first_requests"] for doc in docs]
    # one first request for each connection a worker's first reply named (the server's count: its accepts)
    accepts = [sum(c["accepts"] for c in doc["counters"]) for doc in docs]
    assert [LatencyHistogram.from_dict(f["every"]).count for f in each] == accepts, (each, accepts)
    both = tmp_path / "ab.json"
    assert run_cli(["merge", str(a), str(b), "--json", str(both)]).exit_code == 0
    merged = json.loads(both.read_text())["first_requests"]
    assert LatencyHistogram.from_dict(merged["every"]).count == sum(accepts)
    assert [LatencyHistogram.from_dict(h).count for h in merged["workers"]] == [
        sum(LatencyHistogram.from_dict(f["workers"][i]).count for f in each) for i in range(2)
    ]
    old = json.loads(b.read_text())
    del old["first_requests"]  # as a file from before they were kept apart
    b.write_text(json.dumps(old))
    assert run_cli(["merge", str(a), str(b), "--json", str(both)]).exit_code == 0
    assert "first_requests" not in json.loads(both.read_text())  # half known is not known
    shown = run_cli(["show", str(both)])
    assert "first requests apart from later ones: not known" in " ".join(shown.stdout.split()), shown.output


def test_first_requests_more_than_the_run_served_are_refused_in_one_line(tmp_path: Path) -> None:
    path = _kept_run(tmp_path, "a.json")
    doc = json.loads(path.read_text())
    doc["first_requests"]["every"]["counts"].append([99_999_999, 1])  # a first request no histogram holds
    path.write_text(json.dumps(doc))
    shown = run_cli(["show", str(path)])
    assert shown.exit_code == 1 and len(shown.stderr.splitlines()) == 1, shown.output
    assert "first_requests.every: holds 1 first requests of 99999999 µs, but the run's histogram 0" in shown.stderr


@ATTACH
def test_attached_pool_requests_per_worker_are_its_holders_as_nginx_logged(free_port: int, tmp_path: Path) -> None:
    """Replies that name no worker: each pool connection's holder, found once after the fill, counts its requests,
    its first one too; nginx's log ($pid, $connection_requests) says which worker served each."""
    out = tmp_path / "pool.json"
    with nginx_by_hand(NGINX, free_port, 2, TIMEOUT_S) as nginx:
        result = run_cli(
            [
                *("latency", "--attach", str(nginx.master), "--port", str(free_port), "--protocol", "http"),
                *("--pool", "-c", "8", "--requests-per-connection", "0", "-n", "800", "--json", str(out)),
            ]
        )
        logged = [line.split() for line in nginx.access_log.read_text().splitlines()]
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    pids = [c["pid"] for c in sorted(doc["counters"], key=lambda c: c["index"])]
    served = [sum(1 for row in logged if row[0] == str(pid)) for pid in pids]
    firsts = [sum(1 for row in logged if row[0] == str(pid) and row[2] == "1") for pid in pids]
    placed = [LatencyHistogram.from_dict(h).count for h in doc["worker_histograms"]]
    placed_firsts = [LatencyHistogram.from_dict(h).count for h in doc["first_requests"]["workers"]]
    assert len(logged) == 800 and placed == served and placed_firsts == firsts, (placed, served, placed_firsts)
    rows = run_cli(["show", str(out), "--format", "csv", "--table", "connections"]).stdout.splitlines()
    assert [int(row.split(",")[5]) for row in rows[1:]] == served, rows
    lines = result.stdout.split("kept connections per worker")[1].splitlines()
    table = [line for line in lines if line.split()[:1] in (["0"], ["1"])][:2]  # the two workers' rows
    assert [int(row.split()[4]) for row in table] == served, table  # worker, accepted, held at end, peak, requests
    said = " ".join(result.stdout.split())
    assert "requests, p50, p99: 800 of the 800 requests, those over the pool's connections" in said, said
    firsts_rows = run_cli(["show", str(out), "--format", "csv", "--table", "first_requests"]).stdout.splitlines()
    assert [int(row.split(",")[3]) for row in firsts_rows[1:3]] == firsts, firsts_rows


def test_runs_side_by_side_show_first_and_later_p99_and_each_ones_fill_verdict() -> None:
    capped = _with_fill(_kept(0, pool=False), 4_000_000, 25)
    old = _kept(0, pool=False)  # first_requests None: a file from before they were kept apart
    parts = kept_compare_parts([capped, old])
    rows = [list(map(str, column.cells)) for column in parts[0].columns]
    heads = [column.header for column in parts[0].columns]
    assert heads[-2:] == ["first\np99", "later\np99"], heads
    assert [rows[-2], rows[-1]] == [["4000.00", "-"], ["1.00", "-"]], rows  # the older run's are not known
    notes = [str(p) for p in parts[1:]]
    assert any(note.startswith("nginx epoll: The tail is the fill, not the steady state") for note in notes), notes


def test_repeated_runs_show_the_median_first_and_later_p99() -> None:
    runs = [_with_fill(_kept(0, pool=False), us, 25) for us in (5_000_000, 3_000_000, 6_000_000, 4_000_000)]
    table = kept_repeat_table({"nginx epoll": runs, "older": [_kept(0, pool=False)]})
    assert table is not None
    heads = [column.header for column in table.columns]
    cells = {head: list(map(str, column.cells)) for head, column in zip(heads, table.columns, strict=True)}
    # the median of 4 rounds, the mean of the middle two as the repeat table's (the upper one, 5000.00, before)
    assert cells["first\np99"] == ["4500.00", "-"] and cells["later\np99"] == ["1.00", "-"], cells
