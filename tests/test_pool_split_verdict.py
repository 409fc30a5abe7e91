"""A comparison over connections kept for the whole run says how each mode split them beside the tails.

`latency --server nginx --modes epoll,reuseport --pool -c 16 --requests-per-connection 0 -w 4`: nginx epoll held
13/1/1/1 of the 16 connections (Jain 0.41), reuseport 4/4/5/3 (0.86), and the verdict said 'mixed, p99 within 10%':
the split, which is each worker's load for the pool's whole life, was only in the table. The verdict now says each
mode's split, which spread them more evenly (only where chance does not give both: the multinomial test against an
even split, analysis/seen.py's SURE), and how sure one draw of 16 connections is; `--repeat` says it over the runs.
"""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

from conftest import run_cli
from rich.console import Console
from test_small_sentences_held_nothing import pool_run

from accept_order.core.load_summary import ServerCloses
from accept_order.core.spec import ConcurrentLoad
from accept_order.experiments.latency.experiment import compare_verdict
from accept_order.experiments.latency.pool_split import repeated_split_note
from accept_order.experiments.latency.repeated import LATENCY_COMPARE_REPEATED, SWEEP_REPEATED
from accept_order.experiments.latency.result import LatencyCompareResult, LatencyResult
from accept_order.experiments.latency.sweep_verdict import sweep_split_note

# a real sweep over a pool kept for the run (tests/test_sweep_caps_unbound.py says how it ran)
SWEEP_POOL = Path(__file__).parent / "data" / "sweep_pool_caps_unbound.json"


def _verdict(*runs: object) -> str:
    return compare_verdict(LatencyCompareResult(runs=tuple(runs))).text  # type: ignore[arg-type]


def test_a_lopsided_pool_is_said_beside_close_tails() -> None:
    lopsided = pool_run("epoll", (13, 1, 1, 1), p99_us=3000)
    hashed = pool_run("reuseport", (4, 4, 5, 3), p99_us=3000)
    said = _verdict(lopsided, hashed)
    assert "Connections per worker, each kept for the whole run" in said, said
    assert "epoll 13/1/1/1 (Jain 0.372 over them), uneven beyond chance (an even split spreads 16 at least" in said
    assert "reuseport 4/4/5/3 (Jain 0.970 over them), what an even split gives by chance" in said
    assert "reuseport spread them more evenly than epoll" in said
    assert "one draw of its 16 connections" in said and "--repeat says in how many runs it holds" in said
    # the tails' verdict is unchanged: the split is said beside it, not ranked into it
    assert said.startswith("no clear difference in the tails (all within 10%)"), said


def test_not_ranked_where_chance_gives_both_or_neither() -> None:
    both = _verdict(pool_run("epoll", (5, 3, 6, 2), 3000), pool_run("reuseport", (4, 4, 4, 4), 3000))
    assert "every split is what an even split gives by chance: no mode spread them more evenly" in both, both
    assert "spread them more evenly than" not in both
    neither = _verdict(pool_run("epoll", (16, 0, 0, 0), 3000), pool_run("reuseport", (13, 1, 1, 1), 3000))
    assert "spread them more evenly than" not in neither


def test_every_split_beyond_chance_names_the_least_uneven_where_both_tests_agree() -> None:
    # both beyond chance: the verdict said only that none was named; it now says both tests' figures and names the
    # split that is the least uneven on each (the highest Jain, and the one an even split gives the most often)
    agree = _verdict(pool_run("epoll", (16, 0, 0, 0), 3000), pool_run("reuseport", (13, 1, 1, 1), 3000))
    assert (
        "every split is uneven beyond chance, reuseport's split the least (Jain 0.372 against 0.250; an even split "
        "spreads them so 1 time in 49,000 against less than once in a million times)"
    ) in agree, agree
    # 9/6/1/0 is the more even by Jain (0.542 to 0.492), 11/2/2/1 the likelier (1 time in 310 to 1 in 760): no name
    differ = _verdict(pool_run("epoll", (9, 6, 1, 0), 3000), pool_run("reuseport", (11, 2, 2, 1), 3000))
    assert (
        "every split is uneven beyond chance, and none is the least uneven on both Jain and the test (epoll against "
        "reuseport: Jain 0.542 against 0.492; an even split spreads them so 1 time in 760 against 1 time in 310): "
        "no mode is named"
    ) in differ, differ
    # one split's figures under two names: a tie names none either
    tie = _verdict(pool_run("epoll", (13, 1, 1, 1), 3000), pool_run("reuseport", (1, 13, 1, 1), 3000))
    assert "none is the least uneven on both Jain and the test" in tie, tie


def test_no_least_uneven_is_named_on_figures_the_verdict_does_not_show() -> None:
    # 16/0/0/0 and 15/1/0/0 of 16: Jain 0.250 and 0.283, and an even split gives each less than once in a million
    # times (about 1e-9 and 1e-7): 15/1/0/0 was named the least uneven, 'both tests agreeing', on digits not said
    said = _verdict(pool_run("epoll", (16, 0, 0, 0), 3000), pool_run("reuseport", (15, 1, 0, 0), 3000))
    assert "reuseport's split the least" not in said, said
    assert (
        "none is the least uneven on both Jain and the test (epoll against reuseport: Jain 0.250 against 0.283; an "
        "even split spreads them so less than once in a million times against less than once in a million times)"
    ) in said, said


def test_connections_that_come_and_go_say_no_split() -> None:
    # several requests per connection: a worker's connections end and others open, no split lasts the run
    churn = _verdict(pool_run("epoll", (13, 1, 1, 1), 3000, 10), pool_run("reuseport", (4, 4, 5, 3), 3000, 10))
    assert "Connections per worker" not in churn
    # a server that closed kept connections (nginx's keepalive_requests, Apache's MaxKeepAliveRequests): the client
    # opened others, and the accepts no longer say who held what to the end
    closing = dataclasses.replace(
        pool_run("epoll", (13, 1, 1, 1), 3000), server_closes=ServerCloses(closed=(2, 0, 0, 0))
    )
    assert "Connections per worker" not in _verdict(closing, pool_run("reuseport", (4, 4, 5, 3), 3000))
    more = dataclasses.replace(pool_run("epoll", (13, 1, 1, 1), 3000), pool=(12, 12))  # 16 accepted, 12 opened
    assert "Connections per worker" not in _verdict(more, pool_run("reuseport", (4, 4, 5, 3), 3000))
    one_each = dataclasses.replace(pool_run("epoll", (13, 1, 1, 1), 3000), load=ConcurrentLoad(1600, 16))
    assert "Connections per worker" not in _verdict(one_each, pool_run("reuseport", (4, 4, 5, 3), 3000))


def test_repeat_says_it_over_the_runs() -> None:
    epoll = [pool_run("epoll", held, 3000) for held in ((13, 1, 1, 1), (14, 2, 0, 0), (5, 3, 6, 2))]
    reuseport = [pool_run("reuseport", (4, 4, 5, 3), 3000) for _ in range(3)]
    said = repeated_split_note({"epoll": epoll, "reuseport": reuseport})
    assert "epoll uneven beyond chance in 2 of 3 (median Jain 0.372 over its connections)" in said, said
    assert "reuseport uneven beyond chance in 0 of 3 (median Jain 0.970 over its connections)" in said
    assert "reuseport spread them more evenly in 2 of 3 rounds (in the others, none" in said
    # and the --repeat report prints it
    console = Console(width=300, record=True, file=io.StringIO())
    console.print(*LATENCY_COMPARE_REPEATED.report([list(pair) for pair in zip(epoll, reuseport, strict=True)]))
    assert "reuseport spread them more evenly in 2 of 3 rounds" in " ".join(console.export_text().split())


def test_not_ranked_where_jain_says_the_other_is_more_even() -> None:
    # the exact test orders splits by how likely they are, not how even: 10/3/2/1 of 16 is chance's (1 time in 66),
    # 9/5/2/0 beyond it (1 in 180), yet Jain is 0.561 to 0.582 and the busiest held 10 to 9: naming reuseport as
    # the more even would contradict the figures said beside it
    said = _verdict(pool_run("reuseport", (10, 3, 2, 1), 3000), pool_run("epoll", (9, 5, 2, 0), 3000))
    assert "reuseport 10/3/2/1 (Jain 0.561 over them), what an even split gives by chance" in said, said
    assert "epoll 9/5/2/0 (Jain 0.582 over them), uneven beyond chance" in said, said
    assert "spread them more evenly than" not in said, said
    assert "a split the test calls chance's is the less even by Jain" in said, said
    rounds = repeated_split_note(
        {
            "reuseport": [pool_run("reuseport", held, 3000) for held in ((10, 3, 2, 1), (4, 4, 5, 3))],
            "epoll": [pool_run("epoll", held, 3000) for held in ((9, 5, 2, 0), (13, 1, 1, 1))],
        }
    )
    assert "reuseport spread them more evenly in 1 of 2 rounds (in the others, none" in rounds, rounds


def test_repeat_says_no_round_without_a_name_where_each_named_one() -> None:
    # epoll the more even in round 1, reuseport in rounds 2 and 3: no round named none, so no 'in the others'
    rounds = repeated_split_note(
        {
            "epoll": [pool_run("epoll", held, 3000) for held in ((5, 3, 6, 2), (13, 1, 1, 1), (16, 0, 0, 0))],
            "reuseport": [pool_run("reuseport", held, 3000) for held in ((13, 1, 1, 1), (4, 4, 5, 3), (3, 1, 8, 4))],
        }
    )
    assert "epoll spread them more evenly in 1 of 3; reuseport spread them more evenly in 2 of 3 rounds" in rounds
    assert "in the others" not in rounds, rounds


def test_connections_reopened_without_a_pool_say_no_split() -> None:
    # -c 16 --requests-per-connection 0 (no --pool) with --timeout: each request the client gave up on closed its
    # connection and opened another, 32 accepted (7/8/6/11) for 16 kept: not 'each kept for the whole run'
    slots = ConcurrentLoad(connections=None, duration_s=3.0, concurrency=16, requests_per_connection=0)
    reopened = dataclasses.replace(pool_run("epoll", (7, 8, 6, 11), 3000), load=slots, pool=None)
    assert "Connections per worker" not in _verdict(reopened, pool_run("reuseport", (4, 4, 5, 3), 3000))
    # the same slots, each connection opened once: said
    kept = dataclasses.replace(pool_run("epoll", (13, 1, 1, 1), 3000), load=slots, pool=None)
    assert "epoll 13/1/1/1 (Jain 0.372 over them)" in _verdict(kept, pool_run("reuseport", (4, 4, 5, 3), 3000))


def _sweep_verdict(path: Path) -> str:
    lines = run_cli(["show", str(path)], columns=3000).stdout.splitlines()
    return next(line for line in lines if line.startswith("Verdict:"))


def test_a_sweep_over_a_pool_says_each_caps_split() -> None:
    # 'sweep -w 4 --pool -c 16 --requests-per-connection 0 --work 1ms --duration 2s', the run's own file: the caps'
    # splits were in the kept table only. No wakeup took more than 1, the smallest cap: no cap is named on them
    said = _sweep_verdict(SWEEP_POOL)
    assert "Connections per worker, each kept for the whole run" in said, said
    assert "1 limit 9/7/0/0 (Jain 0.492 over them), uneven beyond chance" in said, said
    assert "no limit 12/4/0/0 (Jain 0.400 over them), uneven beyond chance" in said, said
    assert "no cap is named: no wakeup of any run took more than the smallest cap allows" in said, said
    assert "one run cannot say a cap splits them so every time" in said, said


def test_a_sweep_whose_caps_bound_ranks_their_splits(tmp_path: Path) -> None:
    data = json.loads(SWEEP_POOL.read_text())
    uncapped = next(run for run in data["runs"] if run["server"]["accept_batch"] == 0)
    uncapped["counters"][0]["max_batch"] = 2  # one wakeup of the uncapped run took two: a cap of 1 would bind
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(data))
    said = _sweep_verdict(path)
    assert "every split is uneven beyond chance, 1 limit's split the least (Jain 0.492 against " in said, said
    runs = [LatencyResult.from_dict(run) for run in data["runs"]]
    same = sweep_split_note(runs, applies=False)  # a server the cap does not change: every cap ran the same one
    assert "no cap is named: --accept-batch does not apply to this server" in same, same


def _sweep_repeat_said(rounds: list[list[LatencyResult]]) -> str:
    console = Console(width=3000, record=True, file=io.StringIO())
    console.print(*SWEEP_REPEATED.report(rounds))  # type: ignore[arg-type]
    return " ".join(console.export_text().split())


def test_sweep_repeat_says_it_by_cap_and_ranks_no_round_its_caps_did_not_part() -> None:
    runs = [LatencyResult.from_dict(run) for run in json.loads(SWEEP_POOL.read_text())["runs"]]
    said = _sweep_repeat_said([runs, runs])  # no wakeup above 1, the smallest cap, in either round: none ranked
    assert "1 limit uneven beyond chance in 2 of 2 (median Jain 0.492 over its connections)" in said, said
    assert (
        "no cap is named in any round, whatever the splits: no wakeup of any run took more than the smallest cap "
        "allows, so what parts the splits is most likely one run from another"
    ) in said, said
    # no round's splits were weighed: none is said to have been all chance's, all beyond it, or ordered otherwise
    assert "the splits were all chance's" not in said, said
    # the caps bound (a wakeup of the uncapped run took 2): the one-run rule, round by round
    bound = [dataclasses.replace(r, counters=tuple(dataclasses.replace(c, max_batch=2) for c in r.counters))
             if r.server.accept_batch == 0 else r for r in runs]  # fmt: skip
    evener = dataclasses.replace(runs[0], connections=(4, 4, 5, 3), held_at_end=(4, 4, 5, 3))
    said = _sweep_repeat_said([[evener, *bound[1:]], bound])
    assert "1 limit spread them more evenly in 1 of 2 rounds (in the others, none: the splits were all" in said, said
    assert "whatever the splits" not in said, said


def test_sweep_repeat_says_which_rounds_weighed_their_splits() -> None:
    # three rounds: one whose caps bound and whose splits named 1 limit, one whose caps bound and whose splits were
    # all beyond chance, one whose caps bound no wakeup. Each reason is said of its own rounds: the splits of the
    # third were never weighed, so it is not among those whose splits 'were all chance's, all beyond it, ...'
    runs = [LatencyResult.from_dict(run) for run in json.loads(SWEEP_POOL.read_text())["runs"]]
    bound = [dataclasses.replace(r, counters=tuple(dataclasses.replace(c, max_batch=2) for c in r.counters))
             if r.server.accept_batch == 0 else r for r in runs]  # fmt: skip
    evener = dataclasses.replace(runs[0], connections=(4, 4, 5, 3), held_at_end=(4, 4, 5, 3))
    said = _sweep_repeat_said([[evener, *bound[1:]], bound, runs])
    assert (
        "1 limit spread them more evenly in 1 of 3 rounds (in the others, none: in 1 of them, the splits were all "
        "chance's, all beyond it, or Jain ordered them otherwise; in 1, whatever the splits: no wakeup of any run "
        "took more than the smallest cap allows"
    ) in said, said
    # the round that named none weighed no split: it is said so alone
    said = _sweep_repeat_said([[evener, *bound[1:]], runs])
    assert (
        "1 limit spread them more evenly in 1 of 2 rounds (in the others, none, whatever the splits: no wakeup of any "
        "run took more than the smallest cap allows"
    ) in said, said
    # no round named one: the same two reasons, each with its count
    said = _sweep_repeat_said([bound, runs])
    assert (
        "no cap spread them more evenly in any round: in 1 of them, the splits were all chance's, all beyond it, or "
        "Jain ordered them otherwise; in 1, whatever the splits: no wakeup"
    ) in said, said


def test_sweep_repeat_picks_no_cap_on_tails_where_no_round_s_caps_bound() -> None:
    # the split note beside it named no cap, for no wakeup of any run took more than 1, the smallest cap; the tails'
    # verdict ranked caps alone ('1 limit has the lowest p99 in 2/2 runs, significantly lower than every other'),
    # where one sweep's verdict says 'no cap to pick' of the same runs
    runs = [LatencyResult.from_dict(run) for run in json.loads(SWEEP_POOL.read_text())["runs"]]
    said = _sweep_repeat_said([runs, runs])
    assert (
        "Verdict: no cap to pick: no wakeup of any run in any of the 2 rounds accepted more than 1 connection, no "
        "more than the smallest cap allows, so what parts their tails is most likely not the cap: 1 limit has the "
        "lowest p99 in 2/2 runs"
    ) in said, said
    # a round whose caps bound (a wakeup of the uncapped run took 2): the tails rank the caps as before
    bound = [dataclasses.replace(r, counters=tuple(dataclasses.replace(c, max_batch=2) for c in r.counters))
             if r.server.accept_batch == 0 else r for r in runs]  # fmt: skip
    said = _sweep_repeat_said([runs, bound])
    assert "Verdict: 1 limit has the lowest p99 in 2/2 runs" in said, said
    assert "no cap to pick" not in said, said
    # a server the cap does not apply to: every cap ran the same server, and the verdict says so first too
    data = json.loads(SWEEP_POOL.read_text())["runs"]
    for run in data:
        run["server"].update(server="uvicorn", mode="asyncio")
    same = [LatencyResult.from_dict(run) for run in data]
    said = _sweep_repeat_said([same, same])
    assert (
        "Verdict: no cap to pick: --accept-batch does not apply to this server, so every cap ran the same server and "
        "what parts their tails is not the cap: "
    ) in said, said
