"""One run's verdict on connections kept for its whole life: how they split over the workers, and whether each
worker's tail follows what it held.

A keep-alive pool stays with the workers that accepted it, so a worker holding more of it queues more requests
behind each other: nginx's epoll split a pool of 32 1/17/11/3 and the worker holding 17 had a p99 of 224 ms,
the one holding 1, 25 ms. A single run printed both in its kept table and no verdict; `--modes` runs had the
split in theirs (pool_split.py). The split is judged as pool_split judges it (one draw of its connections:
chance's, or beyond it); the tails are ranked against it pair by pair, workers that held the same left out."""

from __future__ import annotations

from dataclasses import replace

from ...analysis.chance import how_often
from ...analysis.one_run import runs_in
from ...analysis.seen import SURE
from ...analysis.tail_ranks import rank_chance
from ...core.spec import NOT_STARTED
from ...core.text import and_join, plural
from .kept_report import accepted, by_kernel, found_holding, placed_requests, worker_percentile
from .pool_split import held_whole, split_of, stopped
from .result import LatencyResult
from .serving_kind import closing_limits


def _ms(us: int) -> str:
    return f"{us / 1000:.2f} ms"


def tails_follow(held: list[int], p99s: list[int | None]) -> tuple[int, int]:
    """(pairs whose p99s rank as their connections held do, pairs that rank the other way), over the workers that
    held some and served some; pairs that held the same, or whose p99s tie, are in neither."""
    known = [(h, p) for h, p in zip(held, p99s, strict=True) if h and p is not None]
    follow = against = 0
    for i, (h1, p1) in enumerate(known):
        for h2, p2 in known[i + 1 :]:
            sign = (h1 - h2) * (p1 - p2)
            follow += sign > 0
            against += sign < 0
    return follow, against


def _runs(result: LatencyResult) -> int:
    """The runs a result adds: a file merged from others measured one after the other adds each one's draw of its
    connections (merge of two pools of 32 read 'one run: its split is one draw of its 64 connections'); files
    measured at once (--concurrent: several client hosts, one server) are one run. A merge of a merged file counts
    every run its files held (one_run.runs_in); one merged before the files kept their own named only the files of
    the last merge (merge of ab.json and c.json: '2 runs merged' of 3 pools of 32), but the pools' planned sizes add
    while -c stays each run's, so the pool counts them too."""
    merged = result.evidence.get("merged_from")
    if not isinstance(merged, dict) or merged.get("concurrent") or not isinstance(merged.get("files"), list):
        return 1
    each = result.load.concurrency
    pooled = result.pool[1] // each if result.pool is not None and each and result.pool[1] % each == 0 else 0
    return max(runs_in(merged), pooled, 1)


def kept_tail_verdict(result: LatencyResult) -> str | None:
    """`Verdict: worker 1 held 17 of the 32 connections ...`; None where the run's connections were not kept for
    its whole life with a known split (split_of), but for a pool whose workers accepted more than it opened, which
    says why it has none (_reopened). The tails are ranked where two workers or more have a p99."""
    split = split_of(result)
    if split is None:
        return _reopened(result) or _holders_not_whole(result)
    held = list(split.counts)
    total = sum(held)
    p99s = [worker_percentile(result, i, 99.0) if n else None for i, n in enumerate(held)]
    serving = [i for i, p in enumerate(p99s) if p is not None]
    most = max(held)
    top = [i for i, n in enumerate(held) if n == most]
    said = replace(split, name="the split").said()
    runs = _runs(result)
    # a run stopped early held them until the stop, not for the run it was to be
    merged = "for the whole of their runs" + (", or until a stop that cut one" if stopped(result) else "")
    kept = f"of the {plural(total, 'connection')} kept " + (held_whole([result]) if runs == 1 else merged)
    if len(top) == len(held):
        lines = [f"Verdict: the {len(held)} workers held {most} each {kept}: {said}."]
    else:
        who = ("worker " if len(top) == 1 else "workers ") + and_join([str(i) for i in top])
        each = " each" if len(top) > 1 else ""
        lines = [
            f"Verdict: {who} held {most}{each} {kept} ({most / total:.0%}{each}; an even share is "
            f"{1 / len(held):.0%}): {said}."
        ]
    if len(serving) < 2:
        return " ".join([*lines, _no_tails(result, held), _how_sure(runs, total, result, tails=False)])
    follow, against = tails_follow(held, p99s)
    tails = ", ".join(f"worker {i} ({held[i]}): {_ms(p)}" for i in serving if (p := p99s[i]) is not None)
    # pairs of workers that held different counts and whose p99s tie: in neither, and no 'each ... had the higher'
    tied = sum(1 for i in serving for j in serving if i < j and held[i] != held[j]) - follow - against
    if follow and not against and not tied:
        how = "the tails follow the split: each worker that held more connections had the higher p99"
    elif against and not follow and not tied:
        how = "the tails run against the split: each worker that held more connections had the lower p99"
    elif follow or against:
        how = (
            f"the tails follow the split only in part ({follow} of {follow + against + tied} pairs of workers have "
            f"the higher p99 where they held more, {against} the lower, {tied} the same)"
        )
    elif len(set(held[i] for i in serving)) == 1:
        how = "each held as many: there is no split for the tails to follow"
    else:
        how = "no two workers that held different counts had different p99s: the tails say nothing of the split"
    lines.append(f"p99 per worker (connections held): {tails}: {how}{_rank_chance(held, p99s, serving)}.")
    lines.append(_how_sure(runs, total, result))
    return " ".join(lines)


def _reopened(result: LatencyResult) -> str | None:
    """Why a pool kept for the whole run has no split said, where its workers accepted more connections than it
    opened: others were opened in place of connections that ended early, said in the serving server's terms
    (_closer). An attached nginx (keepalive_requests 1000, its default) closed each of a pool of 32 after its 1000th
    request in a 3 s run; the kernel counted 64 accepts, its log 64 connections, and the report said nothing of it
    (replies that name no worker leave the server's closes uncounted) and gave no verdict."""
    took = accepted(result)
    if result.pool is None or result.load.requests_per_connection != 0 or not result.ok or took is None:
        return None
    opened, more = result.pool[0], sum(took) - result.pool[0]
    if more <= 0 or len(took) < 2:
        return None
    return (
        f"No verdict on the pool's split: its workers accepted {plural(sum(took), 'connection')} for a pool of "
        f"{opened}, so {more} were opened in place of connections that ended before the load did ({_closer(result)}"
        "; or a request the client gave up on): the accepts are not who held what to the end."
    )


def _closer(result: LatencyResult) -> str:
    """What closes a kept connection, in the terms of the server that served the run where its kind is known (an
    attached lighttpd read 'as nginx's keepalive_requests, 1000 by default, does', of a server whose own is
    server.max-keep-alive-requests)."""
    limits = closing_limits(result)
    if limits is None:
        return "a server that closes a kept connection after so many requests on it, or after so long"
    kind, named, timed = limits
    many = "so many requests on it, or so long" if timed else "so many requests on it"
    settings = named[0] if len(named) == 1 else f"{', '.join(named[:-1])} or {named[-1]}"
    return f"a server that closes a kept connection after {many}, as {kind.name}'s {settings} can"


def _holders_not_whole(result: LatencyResult) -> str | None:
    """Why a pool whose holders the client found after the fill (no kernel's accepts) has no split said: the server
    ended some of its connections (others then took their place, their holders not looked for: an attached nginx
    with keepalive_requests 50 under 4,000 requests over 40 closed all 40 and the log counted 99 connections), or
    the client found the holders of only part of it. Both read as no verdict and no word of why (review of 9042356),
    where the kernel's accepts say so (_reopened)."""
    held = found_holding(result)
    if result.pool is None or result.load.requests_per_connection != 0 or not result.ok or held is None:
        return None
    opened, found = result.pool[0], sum(held)
    if result.server_closes:
        ended = sum(result.server_closes.closed) + sum(result.server_closes.told)
        return (
            f"No verdict on the pool's split: the server ended {ended or 'some'} of the pool's {opened} connections "
            "before the load did, and the client opened others in their place, whose holders it did not look for: "
            "the holders it found once the pool was filled are not who held what to the end."
        )
    if found < opened:
        return (
            f"No verdict on the pool's split: the client found who held only {found} of the pool's {opened} "
            "connections once it was filled (the others' server side was gone, or no attached worker held it), and "
            "a split of those would leave the rest out."
        )
    return None


def _rank_chance(held: list[int], p99s: list[int | None], serving: list[int]) -> str:
    """How often p99s dealt to these workers at random rank with the split as closely: the order of 2 workers is
    one pair, which chance orders either way half the time ('each worker that held more had the higher p99' of
    17/15 said as much as of 17/13/1/1); '' where nothing was ranked."""
    xs, ys = [held[i] for i in serving], [us for i in serving if (us := p99s[i]) is not None]
    p, test = rank_chance(xs, ys)
    if test == "none":
        return ""
    often = "half the time or more" if p >= 0.5 else how_often(p)
    beyond = "so the order is beyond chance" if p < SURE else "so the order alone is not beyond chance"
    dealt = f"p99s dealt to these {len(xs)} workers at random rank with the split as closely"
    return f"; {dealt} {often} ({test} test), {beyond}"


def _no_tails(result: LatencyResult, held: list[int]) -> str:
    """Why no tails are ranked: nobody timed a worker's requests (an attached server whose replies name no worker:
    the kernel counted its accepts; a file that keeps none per worker), or one worker alone held the pool."""
    # holders found after the fill, beside the kernel's accepts or not: their requests were timed per worker
    if by_kernel(result) and placed_requests(result) is None:
        return (
            "No worker's p99 is known: the replies do not name a worker, and the kernel counted only each one's "
            "accepts."
        )
    holding = [i for i, n in enumerate(held) if n]
    if len(holding) > 1:  # a file that keeps no latencies per worker (older ones)
        return "No worker's p99 is known: the result keeps no latencies per worker."
    p99 = worker_percentile(result, holding[0], 99.0)
    return f"Worker {holding[0]} alone held the pool" + (f": its p99 is the run's ({_ms(p99)})." if p99 else ".")


def _how_sure(runs: int, total: int, result: LatencyResult, tails: bool = True) -> str:
    draws = (
        f"one run: its split is one draw of its {plural(total, 'connection')}"
        if runs == 1
        else f"{runs} runs merged: its split adds {runs} draws ({total} connections in all), each worker's row "
        "adding that index's connections from every run: a busiest worker at another index in another run evens the sum"
    )
    each = ", and each p99 rests on the requests of its worker's own connections" if tails else ""
    return f"How sure: {draws}{each}; {again_said(result, 'it holds')}"


def again_said(result: LatencyResult, holds: str) -> str:
    """What says whether a run's finding `holds` ('it holds'): --repeat, and --modes beside it, for a server this tool
    starts; both refuse a server it did not ('--repeat starts the server for every run: not with --attach or
    --target', '--attach drives one running server: not with --modes'), where an attached gunicorn's pool verdict
    named them: the command run again says it there."""
    if result.server.kind in NOT_STARTED:
        return (
            f"another run of this command says whether {holds} (--repeat and --modes start the server they measure: "
            "not with --attach or --target)"
        )
    return f"--repeat says in how many runs {holds}, --modes puts other accept modes beside it"
