"""How the connections kept for a whole run fell over the workers, beside the tails in a comparison's verdict.

A connection kept for the whole run (a pool, or --requests-per-connection 0) stays with the worker that accepted
it: the split decides each worker's load for the run's whole life, so a mode whose tails are close to another's
can still have left one worker most of the pool (nginx epoll held 13/1/1/1 of 16, reuseport 4/4/5/3). The
verdict said only the tails; the split was in the table. Which mode spread them more evenly is said only where
chance does not give both splits: a split of 16 connections is 16 draws, and 5/3/6/2 is what an even split
gives more often than not. The rule is `run`'s for a hash spread (analysis/chance.py's test, analysis/seen.py's
SURE): a split no more uneven than an even split gives SURE of the time or more is chance's."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ...analysis.chance import how_often, uniform_spread_p
from ...analysis.fairness import jain_index
from ...analysis.one_run import merged_runs
from ...analysis.seen import SURE
from ...core.text import and_join, plural
from .kept_report import accepted, by_kernel, found_holding
from .result import LatencyResult
from .stop_reason import stopped_early


@dataclass(frozen=True)
class Split:
    """One run's connections per worker, Jain's index over them, and how often an even split is this uneven."""

    name: str
    counts: tuple[int, ...]
    jain: float
    p: float
    test: str
    source: str = ""  # where the counts came from, where not the workers' own replies (KERNEL, HELD)

    @property
    def by_chance(self) -> bool:
        """An even split gives one at least this uneven SURE of the time or more: nothing to rank on."""
        return self.p >= SURE

    def said(self) -> str:
        """`epoll 13/1/1/1 (Jain 0.372 over them), uneven beyond chance (an even split ... 1 time in 49,000 ...)`;
        where the counts are not the workers' replies, where they came from first: `(held, as the client ...; Jain`."""
        how = "what an even split gives by chance" if self.by_chance else "uneven beyond chance"
        source = f"{self.source}; " if self.source else ""
        return (
            f"{self.name} {'/'.join(map(str, self.counts))} ({source}Jain {self.jain:.3f} over them), {how} (an even "
            f"split spreads {sum(self.counts)} at least this unevenly {how_often(self.p)}, {self.test} test)"
        )


KERNEL = "accepted, as the kernel counted"
HELD = "held, as the client found them after the fill"


def counted(result: LatencyResult) -> tuple[tuple[int, ...] | None, str]:
    """The connections per worker and where they came from: the workers' replies (''), the kernel's accepts
    (KERNEL), or, where the replies name no worker and the kernel did not count (no bpftrace, as a user), the
    holders the client found once the pool was filled (HELD: loads/kept_owners.py). The kernel's first where both
    exist: they differ only where connections were reopened, and its accepts then say so (kept_tail._reopened)."""
    took = accepted(result)
    if took is not None:
        return took, KERNEL if by_kernel(result) else ""
    held = found_holding(result)
    return held, HELD if held is not None else ""


def _label(result: LatencyResult) -> str:
    return result.server.label


def stopped(result: LatencyResult) -> bool:
    """The run ended before its load did (Ctrl-C, SIGTERM; an attached worker's exit; in a merge, any file's)."""
    return result.interrupted or stopped_early(result) is not None


def held_whole(results: Sequence[LatencyResult], name: Callable[[LatencyResult], str] = _label) -> str:
    """How long the runs' connections were held: 'for the whole run', or where a run was stopped early, until the
    stop ('latency --pool' stopped by Ctrl-C 5.7 s into 30 s read '12 of the 16 connections kept for the whole
    run')."""
    cut = [name(r) for r in results if stopped(r)]
    if not cut:
        return "for the whole run"
    if len(results) == 1:
        return "until the stop"
    return f"for the whole run ({and_join(cut)}: until the stop)"


def split_of(result: LatencyResult, name: Callable[[LatencyResult], str] = _label) -> Split | None:
    """The run's split of connections kept for its whole life; None where they were not (one request each, or
    several: connections come and go; or the server closed some, or a pool's workers accepted more than it opened:
    the client opened others, and the accepts are no longer who held what), or nobody counted them per worker."""
    took, source = counted(result)
    kept_whole_run = result.load.keeps_connections and result.load.requests_per_connection == 0
    if not kept_whole_run or not result.ok or took is None or len(took) < 2 or not sum(took):
        return None
    # the connections kept open: a pool's opened, else the load's slots (a client that gave up on a request
    # closes its connection and opens another: -c 16 with timeouts accepted 32, 16 held at the end)
    kept = result.pool[0] if result.pool is not None else result.load.concurrency
    if result.server_closes or sum(took) != kept:
        return None
    p, test = uniform_spread_p(took)
    return Split(name(result), tuple(took), jain_index(took), p, test, source)


def more_even(splits: Sequence[Split]) -> list[str]:
    """The modes that spread the connections more evenly than the rest: those whose split is chance's where
    another's is uneven beyond it (none where every split is chance's, or every one is beyond it), and only where
    each of theirs is also the more even by Jain: the exact test orders splits by how likely they are, not how
    even, so 10/3/2/1 of 16 is chance's (1 time in 66) and 9/5/2/0 beyond it (1 in 180), Jain 0.561 to 0.582."""
    even, beyond = [s for s in splits if s.by_chance], [s for s in splits if not s.by_chance]
    if not even or not beyond or min(s.jain for s in even) <= max(s.jain for s in beyond):
        return []
    return [s.name for s in even]


def least_uneven(splits: Sequence[Split]) -> Split | None:
    """Where every split is uneven beyond chance: the one both tests call the least uneven (the highest Jain, and
    the one an even split gives the most often), None where they name different ones or two tie (13/1/1/1 and
    1/13/1/1 are one split's figures). Judged on the figures as said beside it: 16/0/0/0 and 15/1/0/0 of 16 are
    each 'less than once in a million times', so naming 15/1/0/0 the less uneven on the test, from digits not
    shown, read as both tests agreeing where the test as said does not tell them apart."""
    if len(splits) < 2 or any(s.by_chance for s in splits):
        return None
    evenest = max(splits, key=lambda s: s.jain)
    likeliest = max(splits, key=lambda s: s.p)
    others = [s for s in splits if s is not evenest]
    if evenest is not likeliest or any(s.jain >= evenest.jain or s.p >= evenest.p for s in others):
        return None
    if any(_jain_said(s) == _jain_said(evenest) or how_often(s.p) == how_often(evenest.p) for s in others):
        return None
    return evenest


def _jain_said(split: Split) -> str:
    return f"{split.jain:.3f}"


def _all_uneven(splits: Sequence[Split], what: str) -> str:
    """Every split beyond chance: said so, the least uneven named where both tests agree, with both tests' figures
    (the first named's against the others')."""
    least = least_uneven(splits)
    ordered = sorted(splits, key=lambda s: s is not least)  # the least uneven first, the others as they ran
    jains = " against ".join(_jain_said(s) for s in ordered)
    chances = " against ".join(how_often(s.p) for s in ordered)
    if least is not None:
        return (
            f"every split is uneven beyond chance, {least.name}'s split the least (Jain {jains}; an even split "
            f"spreads them so {chances})"
        )
    names = " against ".join(s.name for s in ordered)
    return (
        f"every split is uneven beyond chance, and none is the least uneven on both Jain and the test ({names}: "
        f"Jain {jains}; an even split spreads them so {chances}): no {what} is named"
    )


def ranked_said(splits: Sequence[Split], what: str = "mode") -> str:
    """Who spread them more evenly, or why none is named (`what`: what the runs differ by, a mode or a cap)."""
    better = more_even(splits)
    if better:
        rest = [s.name for s in splits if s.name not in better]
        return f"{and_join(better)} spread them more evenly than {and_join(rest)}"
    if all(s.by_chance for s in splits):
        return f"every split is what an even split gives by chance: no {what} spread them more evenly"
    if not any(s.by_chance for s in splits):
        return _all_uneven(splits, what)
    return (
        "a split the test calls chance's is the less even by Jain (the test weighs how likely a split is, Jain how "
        f"even): no {what} is named as spreading them more evenly on it"
    )


def pool_split_note(
    results: Sequence[LatencyResult],
    name: Callable[[LatencyResult], str] = _label,
    what: str = "mode",
    why_not: str = "",
) -> str:
    """The verdict's sentence on the split ('' where fewer than two runs kept their connections for the whole run
    with a known split), with how sure: one run's split is one draw of its connections. `what`: what the runs
    differ by (sweep: a cap); `why_not`: why none is ranked on it, said in place of the ranking (a sweep whose cap
    bound no wakeup: what parts the splits is one run from another, not the cap)."""
    split = [(r, s) for r in results if (s := split_of(r, name)) is not None]
    splits = [s for _, s in split]
    if len(splits) < 2:
        return ""
    sizes = sorted({sum(s.counts) for s in splits})
    draws = plural(sizes[0], "connection") if len(sizes) == 1 else f"{'/'.join(map(str, sizes))} connections"
    held = held_whole([r for r, _ in split], name)
    # a merged file's split adds its runs' (merge of two pools of 8 read '10/6 ... a split is one draw of its 16
    # connections, so one run cannot say', where 4/4 and 6/2 were drawn): each worker's row adds that index's
    runs = merged_runs(r.evidence for r, _ in split)
    drawn = (
        f"a split is one draw of its {draws}, so one run cannot say"
        if runs == 1
        else f"each split adds {runs} runs' draws of their connections ({draws} in all), each worker's row adding "
        f"that index's from every run, so {runs} runs merged cannot say"
    )
    return (
        f"Connections per worker, each kept {held if runs == 1 else 'for the whole of their runs'} and so its "
        "worker's load to the end: "
        + "; ".join(s.said() for s in splits)
        + f": {why_not or ranked_said(splits, what)}. How sure: the tests say how often an even split gives each, but "
        f"{drawn} a {what} splits them so every time: --repeat says in how many runs it holds"
    )


def _named(split: Split | None, name: str) -> Split | None:
    """The split under its variant's name (--repeat names a variant apart from its label where two share it)."""
    return None if split is None else replace(split, name=name)


def repeated_split_note(
    variants: dict[str, list[LatencyResult]],
    what: str = "mode",
    unranked: Callable[[Sequence[LatencyResult]], str] = lambda runs: "",
) -> str:
    """`--repeat` over connections kept for the whole run: per variant in how many runs its split was uneven beyond
    chance and its median Jain's index over the connections; which spread them more evenly in how many rounds (the
    one-run rule, round by round). '' where fewer than two variants have a split in every round. `what`: what the
    variants differ by (a mode, a cap); `unranked(a round's runs)`: why that round names none whatever its splits
    ('' where it may: sweep's caps that bound no wakeup, sweep_verdict.split_unranked)."""
    splits = {label: [_named(split_of(r), label) for r in runs] for label, runs in variants.items()}
    known = {label: [s for s in runs if s is not None] for label, runs in splits.items()}
    if sum(1 for runs in known.values() if runs) < 2:
        return ""
    per_mode = []
    for label, runs in known.items():
        if not runs:
            continue
        jains = [s.jain for s in runs]
        uneven = sum(1 for s in runs if not s.by_chance)
        per_mode.append(
            f"{label} uneven beyond chance in {uneven} of {len(runs)} "
            f"(median Jain {statistics.median(jains):.3f} over its connections)"
        )
    rounds = list(zip(*splits.values(), strict=True))
    runs_of = list(zip(*variants.values(), strict=True))
    whole = [([s for s in row if s is not None], ran) for row, ran in zip(rounds, runs_of, strict=True)]
    whole = [(row, ran) for row, ran in whole if len(row) >= 2]
    wins: dict[str, int] = {}
    named = 0  # rounds that named one: one each may name another, so no one variant's wins say how many
    reasons: list[str] = []  # why rounds named none whatever their splits
    for row, ran in whole:
        if why := unranked(ran):
            reasons.append(why)
            continue
        better = more_even(row)
        named += bool(better)
        for label in better:
            wins[label] = wins.get(label, 0) + 1
    judged = len(whole) - named - len(reasons)  # rounds that named none on their splits
    others = _none_named(judged, reasons)
    apart = ", " if not judged else ": "  # 'none, whatever the splits: ...'; 'none: the splits were ...'
    if wins:
        ranked = "; ".join(f"{label} spread them more evenly in {n} of {len(whole)}" for label, n in wins.items())
        ranked += f" rounds (in the others, none{apart}{others})" if named < len(whole) else " rounds"
    elif reasons and not judged:  # no round weighed its splits
        ranked = f"no {what} is named in any round{apart}{others}"
    else:
        ranked = f"no {what} spread them more evenly in any round: {'' if reasons else 'in each, '}{others}"
    return (
        "Connections per worker over the runs (each kept for the whole run, so its worker's load to the end; a run's "
        f"split is one draw of its connections): {'; '.join(per_mode)}; {ranked}"
    )


def _none_named(judged: int, reasons: Sequence[str]) -> str:
    """Why the rounds that named none did not: `judged` of them on their splits, the others (`reasons`, one a
    round) whatever their splits. A round whose splits were not weighed is not said to have had splits that named
    none: 'in each, the splits were all chance's, ...; in 2 of them, whatever the splits: ...' gave both of 2
    rounds two reasons, where only the second was theirs."""
    splits = "the splits were all chance's, all beyond it, or Jain ordered them otherwise"
    if not reasons:
        return splits
    unranked = f"whatever the splits: {'; '.join(dict.fromkeys(reasons))}"
    if not judged:
        return unranked
    return f"in {judged} of them, {splits}; in {len(reasons)}, {unranked}"
