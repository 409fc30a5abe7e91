"""Which accepts-per-wakeup cap of a sweep to pick, and why, in a few lines.

A cap that lost connections (it failed some, or its own network namespace's counters say the kernel dropped
attempts: analysis/losses.py) cannot win on latency: its histogram holds only the requests it served, so it
ranks after every cap that served all. Counters of a shared namespace are host-wide: said as such, never as
a cap's loss. Among the caps that served all, the pick is the cap whose tail is tighter than each other's
(lower by over 10% on p99, p99.9 or deviation, higher on no figure: analysis/tails.py's test), or every cap
whose tail is tighter than or within 10% of each other cap's (such caps are within 10% of each other),
whichever has the lowest p99; otherwise no cap is clearly better, and the verdict shows two caps whose
figures disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...analysis.losses import host_wide_losses, host_wide_note, lost_connections, own_losses, sweep_name
from ...analysis.one_run import NOT_APART, lower_sureness, merged_runs, no_winner_sureness, samples_apart, tell_apart
from ...analysis.tails import Pair, failed_before_stop, figures, pair_text
from ...core.protocol import ABORTED
from ...core.text import and_join, plural
from ...render.evidence import short_counter
from ..generator_pace import every_run_paced, latency_paced_said
from .pool_split import pool_split_note
from .result import LatencyResult

Named = tuple[str, LatencyResult]


def why_lost(result: LatencyResult) -> str:
    """'384 of 8000 failed: 384 timeout; ListenOverflows +1834 in its own network namespace'."""
    parts = []
    if result.failed:
        kinds = ", ".join(f"{n} {name}" for name, n in sorted(result.errors.items(), key=lambda kv: -kv[1]))
        parts.append(f"{result.failed} of {result.driven} failed: {kinds}")
    elif not result.ok:
        parts.append("served nothing")
    moved = own_losses(result.evidence)
    if moved:
        counts = ", ".join(f"{short_counter(name)} {n:+d}" for name, n in moved.items())
        parts.append(f"{counts} in its own network namespace")
    return "; ".join(parts)


def _lost_text(lost: Sequence[Named], everyone: bool) -> str:
    """Who lost connections and how; what an overflow of its own listen queue means, said once."""
    each = [f"{n} ({why_lost(r)})" for n, r in lost]
    overflowed = [r.server for _, r in lost if "TcpExtListenOverflows" in own_losses(r.evidence)]
    queue = ""
    if overflowed:  # the backlog where known: an attached server's as read, none of a --target's
        backlogs = "/".join(map(str, sorted({b for server in overflowed for b in server.known_backlogs})))
        limit = f" (backlog {backlogs})" if backlogs else ""
        queue = f"; ListenOverflows: a handshake completed while the accept queue{limit} was full"
    if everyone:
        return f"every cap lost connections: {', '.join(each)}{queue}"
    one = len(lost) == 1
    their, rank = ("its", "it ranks") if one else ("their", "they rank")
    return (f"{and_join(each)} lost connections{queue}: {their} latencies cover only what {'it' if one else 'they'} "
            f"served, so {rank} after the others")  # fmt: skip


def possessive(name: str) -> str:
    return f"{name}'s"


def _during(named: Sequence[Named]) -> str:
    """In which runs host-wide loss counters moved: "every cap's run", "1 limit's and 4 limit's runs"."""
    moved = [n for n, r in named if host_wide_losses(r.evidence)]
    if len(moved) == len(named) > 1:
        return "every cap's run"
    return and_join([possessive(n) for n in moved] or ["no"]) + (" runs" if len(moved) > 1 else " run")


def _ms(values_us: Sequence[float]) -> str:
    return ", ".join(f"{v / 1000:.2f}" for v in values_us) + " ms"


def _span(values_us: Sequence[float]) -> str:
    low, high = min(values_us), max(values_us)
    return f"{low / 1000:.2f} ms" if low == high else f"{low / 1000:.2f} to {high / 1000:.2f} ms"


def _pick(whole: Sequence[Named]) -> tuple[tuple[str, ...], str]:
    """The cap (or caps) to pick among those that served every connection (sorted by p99, then deviation),
    and the sentence that says why; no cap when none is clearly better."""
    if len(whole) == 1:
        name, only = whole[0]
        return (name,), f"pick {name}: the only cap that served every connection (p99 {_ms([_p99(only)])})"
    names = [name for name, _ in whole]
    figs = {name: figures(r) for name, r in whole}

    def pair(a: str, b: str) -> Pair:
        return Pair(a, b, figs[a], figs[b])

    def no_looser(a: str, b: str) -> bool:
        """a's tail is tighter than b's, or within 10% of it (p99, p99.9 and deviation)."""
        return not pair(a, b).tails_differ() or pair(a, b).tighter() == a

    # The pick: every cap no looser than any other. Two such caps are within 10% of each other (neither can
    # be tighter than the other), whichever of them has the lowest p99.
    picked = [c for c in names if all(no_looser(c, o) for o in names if o != c)]
    rest = [name for name in names if name not in picked]
    if not rest:
        return (), (
            "no cap is clearly better: their p99, p99.9 and deviation are within 10% of each other (p99 "
            f"{_span([figs[c]['p99'] for c in picked])}): the cap did not change the tail here"
        )
    if not picked:  # show two caps whose figures disagree (each lower on some figure), else one cap looser
        looser = [(a, b) for a in names for b in names if a != b and not no_looser(a, b)]
        a, b = next(((a, b) for a, b in looser if (b, a) in looser), looser[0])
        return (), f"no cap is clearly better: {a} vs {b}: {pair_text(pair(a, b))}"
    p99 = [figs[c]["p99"] for c in picked]
    others = [figs[r]["p99"] for r in rest]
    tighter = all(pair(c, r).tighter() == c for c in picked for r in rest)
    if tighter and all("p99" in pair(c, r).lower("a") for c in picked for r in rest):  # lower on p99 as well
        if len(picked) == 1:
            c = picked[0]
            devs = [figs[r]["dev"] for r in rest]
            return (c,), (
                f"pick {c}: its tail is tighter than every other cap's, by over 10% and higher on no figure (p99 "
                f"{_ms(p99)} vs {_span(others)}, deviation {_ms([figs[c]['dev']])} vs {_span(devs)})"
            )
        return tuple(picked), (
            f"pick {' or '.join(picked)}: their tails are within 10% of each other (p99 {_ms(p99)}) and tighter "
            f"than {and_join([possessive(r) for r in rest])} (p99 {_ms(others)})"
        )
    # Not lower on p99, or only within 10% of some cap: why each other cap is not picked, by a cap whose tail
    # is tighter than its (one picked when one is).
    than = "by over 10% and higher on no figure" if tighter else "or within 10% of it"
    head = f"its tail is tighter than every other cap's, {than}"
    if len(picked) > 1:
        than = (
            "by over 10% and higher on no figure"
            if tighter
            else f"or within 10% of {'it' if len(rest) == 1 else 'them'}"
        )
        head = (
            f"their tails are within 10% of each other (p99 {_ms(p99)}) and each is tighter than "
            f"{and_join([possessive(r) for r in rest])}, {than}"
        )
    why = []
    for r in rest:
        c = next(c for c in [*picked, *rest] if c != r and not no_looser(r, c))
        both = pair(c, r)
        if c in picked and "p99" in both.lower("a"):  # lower on p99 and higher on nothing: the tail says it
            ms = [f"{k} {figs[c][k] / 1000:.2f} vs {figs[r][k] / 1000:.2f} ms" for k in ("p99", "dev")]
            why.append(f"{c} vs {r}: {', '.join(ms).replace('dev ', 'deviation ')}")
        else:
            why.append(f"{c} vs {r}: {pair_text(both)}")
    return tuple(picked), f"pick {' or '.join(picked)}: {head}; " + "; ".join(why)


@dataclass(frozen=True)
class SweepVerdict:
    """The caps in rank order (the pick first, those that lost connections last), the ones that lost
    connections, the cap or caps to pick (none when no cap is clearly better), the text, and how sure the
    comparison of one run per cap is ('' where it compared no tails: analysis/one_run.py)."""

    ranking: tuple[str, ...]
    lost: tuple[str, ...]
    pick: tuple[str, ...]
    text: str
    sure: str = ""

    @property
    def said(self) -> str:
        """The verdict as the report says it: the text, then how sure."""
        return f"{self.text}. {self.sure}" if self.sure else self.text


def _p99(result: LatencyResult) -> float:
    return float(result.histogram.percentile(99))


def _tail(result: LatencyResult) -> tuple[float, float]:
    return _p99(result), result.histogram.stdev_us


def _lost(result: LatencyResult) -> tuple[int, int]:
    """Fewest lost first: failures (none served: last of all), then the drops of the cap's own namespace."""
    return result.failed + (0 if result.ok else 1 << 62), sum(own_losses(result.evidence).values())


def _own_failures(result: LatencyResult) -> str:
    """What a cap cut short failed before the stop ('7 ECONNREFUSED'): its own, unlike the connections in flight
    at the stop (aborted); '' when none."""
    if not failed_before_stop(result):
        return ""
    own = sorted(((k, n) for k, n in result.errors.items() if k != ABORTED), key=lambda kv: -kv[1])
    return ", ".join(f"{n} {name}" for name, n in own)


def _sureness(whole: Sequence[Named], pick: Sequence[str]) -> str:
    """One run per cap: how sure the pick (or that none is better) is, from the runs' own samples
    (analysis/one_run.py); nothing where one cap alone served every connection (a count, not a sample)."""
    if len(whole) < 2:
        return ""
    runs = merged_runs(r.evidence for _, r in whole)  # a merged file's runs are one histogram each
    if not pick:
        return no_winner_sureness(runs)
    histograms = {name: r.histogram for name, r in whole}
    return lower_sureness(pick, [name for name in histograms if name not in pick], histograms, runs)


@dataclass(frozen=True)
class Unbound:
    """What the workers' own most-accepts-per-wakeup show where no wakeup took more than the smallest cap allows:
    `most`, the most any wakeup of any run took; `reached`, the capped runs that took their own cap in some wakeup
    (their cap ended that wakeup: whether another connection was waiting then, their counts cannot show);
    `roomier`, the runs whose cap allowed more than `most` (or none), which never took more than it either;
    `short`, the runs capped at `most` whose own wakeups took fewer (name, their own most): another run's most
    is not theirs."""

    most: int
    reached: tuple[str, ...]
    roomier: tuple[str, ...]
    short: tuple[tuple[str, int], ...] = ()


def _apart(whole: Sequence[Named], pick: Sequence[str]) -> bool:
    """Whether the runs' own samples tell the pick from every other whole cap (analysis/one_run.py)."""
    histograms = {name: r.histogram for name, r in whole}
    return samples_apart(pick, [name for name in histograms if name not in pick], histograms)


def _not_apart(pick: Sequence[str], sentence: str) -> str:
    """No pick where the tail the figures favour is tighter by less than the samples tell apart: which cap led and
    why (the pick's own words), and what would tell the caps apart. 'Pick 4 limit' beside 'How sure: not even
    within these runs' (300 latencies a cap: p99 intervals 1.23-∞ and 1.58-∞ ms) advised more than it knew."""
    why = sentence.split(": ", 1)[1]
    led = f"{' and '.join(pick)} led"
    return f"no cap to pick: {led} on these runs' figures, {NOT_APART}: {why}; {tell_apart('the caps')}"


def _paced(pick: Sequence[str], sentence: str, every: bool) -> str:
    """No pick where the load generator set the pace of every cap's run compared (`every`: that is every run): which
    cap led on the figures, and why."""
    why = sentence.split(": ", 1)[1]
    paced = latency_paced_said("cap's run" if every else "cap's run compared")
    return f"no cap to pick: {paced}; on the figures, {' and '.join(pick)} led: {why}"


def never_bound(results: Sequence[LatencyResult]) -> Unbound | None:
    """Where no wakeup of any run took more connections than the smallest cap allows (the workers' own max per
    wakeup): then what parts the runs is one run from another, not the cap. A pool opened one connection at a
    time at idle is so ('sweep --pool -c 16 --requests-per-connection 0': 1 at most in each of the four runs, and
    '1 limit's whole tail is lower' than 32 limit's). A run that took exactly its cap is said apart (`reached`):
    its cap ended those wakeups, so 'no cap bound' would overstate it. None where some wakeup took more than the
    smallest cap, or a count is missing."""
    caps = [r.server.accept_batch for r in results]
    batches = [c.max_batch for r in results for c in r.counters]
    if not batches or any(b is None for b in batches) or not any(caps) or len(results) < 2:
        return None
    most = max(b or 0 for b in batches)
    if most > min(c for c in caps if c > 0):
        return None
    # each run's own most: a cap of 2 beside a run that took 2 once was said reached by a run that took 1 at most
    own = [
        (sweep_name(r), r.server.accept_batch, max((c.max_batch or 0 for c in r.counters), default=0)) for r in results
    ]
    reached = tuple(name for name, cap, took in own if cap and took >= cap)
    short = tuple((name, took) for name, cap, took in own if cap and took < cap <= most)
    roomier = tuple(name for name, cap, _ in own if not cap or cap > most)
    return Unbound(most, reached, roomier, short) if roomier else None  # every cap reached: compared as they ran


def _unbound_text(unbound: Unbound, between: str) -> str:
    """'no cap to pick' and what the counts show: no cap bound, or a cap reached but not exceeded where allowed."""
    most = plural(unbound.most, "connection")
    if not unbound.reached and unbound.short:  # `most` is some cap, which its own run never took
        runs = and_join([possessive(n) for n, _ in unbound.short]) + (" run" if len(unbound.short) == 1 else " runs")
        took = and_join([str(k) for _, k in unbound.short])
        return (
            f"no cap to pick: no run reached its cap in a wakeup: none accepted more than {most}, and {runs}, capped "
            f"at {unbound.most}, no more than {took}, so no cap bound, and what parts them is one run from another"
            f"{between}"
        )
    if not unbound.reached:
        return (
            f"no cap to pick: no wakeup of any run accepted more than {most}, below every cap, so no cap bound, and "
            f"what parts them is one run from another{between}"
        )
    one = len(unbound.reached) == 1
    runs = and_join([possessive(n) for n in unbound.reached]) + (" run" if one else " runs")
    its, their = ("its", "its cap") if one else ("their", "their caps")
    return (
        f"no cap to pick: no wakeup of any run accepted more than {most}. {runs} reached {their} ({unbound.most} "
        f"in a wakeup), so the cap ended such wakeups, and whether a connection was left waiting then {its} counts "
        f"cannot show; {and_join(unbound.roomier)}, which allowed more, never took more than {unbound.most} in a "
        f"wakeup either: what parts them is most likely one run from another{between}"
    )


def _between(whole: Sequence[Named]) -> str:
    """The tightest whole run against the loosest, where a cap picks none: '' where one run alone is whole (the
    others lost connections), which set against itself read '(1 limit vs 1 limit: ... within 10%)'."""
    (a, first), (b, last) = whole[0], whole[-1]
    return f" ({a} vs {b}: {pair_text(Pair(a, b, figures(first), figures(last)))})" if a != b else ""


def _sentences(parts: Sequence[str]) -> str:
    return ". ".join(p[:1].upper() + p[1:] for p in parts)


def sweep_verdict(results: Sequence[LatencyResult], applies: bool = True) -> SweepVerdict:
    """`applies`: False where the server has no setting the cap changes (ModeInfo.batches): every cap ran the
    same server, and no cap is picked (Puma's 'pick 1 limit' was one run against another of one server)."""
    named = [(sweep_name(r), r) for r in results]
    # A cap Ctrl-C cut short ran for less time, and its connections in flight were counted as aborted by the
    # stop: not lost by the cap, and not compared (said apart, ranked last).
    cut = [n for n, r in named if r.interrupted]
    ran = [(n, r) for n, r in named if not r.interrupted]
    whole = sorted((nr for nr in ran if not lost_connections(nr[1])), key=lambda nr: _tail(nr[1]))
    lost = sorted((nr for nr in ran if lost_connections(nr[1])), key=lambda nr: _lost(nr[1]))
    host = host_wide_note([r.evidence for r in results], _during(named))
    was = "was" if len(cut) == 1 else "were"
    stopped = [f"{and_join(cut)} {was} cut short by the stop: not compared"] if cut else []
    stopped += [f"{n} failed {own} before the stop" for n, r in named if r.interrupted and (own := _own_failures(r))]
    if len(results) == 1:
        text = f"one cap only ({named[0][0]}): nothing to compare it with"
        if cut:
            own = _own_failures(results[0])
            text += "; it was cut short by the stop" + (f" (it failed {own} before the stop)" if own else "")
        elif lost:
            text += f"; it lost connections ({why_lost(lost[0][1])})"
        return SweepVerdict(
            (named[0][0],), tuple(n for n, _ in lost), (), _sentences([text, *([host] if host else [])])
        )
    parts = [*stopped, *([_lost_text(lost, everyone=not whole)] if lost else [])]
    parts += [host] if host else []
    pick: tuple[str, ...]
    sure = ""
    if whole and not applies:
        pick, sentence = (
            (),
            (
                "no cap to pick: --accept-batch does not apply to this server, so every cap ran the same server and "
                f"what parts them is one run from another{_between(whole)}"
            ),
        )
    elif whole and (unbound := never_bound(results)) is not None:
        pick, sentence = (), _unbound_text(unbound, _between(whole))
    elif whole:
        pick, sentence = _pick(whole)
        sure = _sureness(whole, pick)
        if pick and every_run_paced([r for _, r in whole]):  # as burst --repeat and latency --modes say it
            pick, sentence = (), _paced(pick, sentence, len(whole) == len(results))
            sure = _sureness(whole, pick)
        elif pick and not _apart(whole, pick):  # no pick surer than How sure: it says the samples cannot tell
            pick, sentence = (), _not_apart(pick, sentence)
    else:
        pick, sentence = (), "no cap to pick: each histogram holds only what its cap served"
    whole = sorted(whole, key=lambda nr: nr[0] not in pick)  # the pick first, the others as they were (by p99)
    parts.append(sentence)
    ranking = (*(n for n, _ in whole + lost), *cut)
    return SweepVerdict(ranking, tuple(n for n, _ in lost), pick, _sentences(parts), sure)


def split_unranked(results: Sequence[LatencyResult], applies: bool = True) -> str:
    """Why no cap is ranked on how its run split a pool ('' where one may be): the cap cannot have parted the
    splits where it does not apply to the server, or where no wakeup took more than the smallest cap allows (a
    pool opened one connection at a time)."""
    if not applies:
        return "--accept-batch does not apply to this server, so every cap ran the same server"
    if never_bound(results) is not None:
        return (
            "no wakeup of any run took more than the smallest cap allows, so what parts the splits is most likely one "
            "run from another"
        )
    return ""


def sweep_split_note(results: Sequence[LatencyResult], applies: bool = True) -> str:
    """How each cap's run split a pool kept for the whole run, as `latency --modes` says each mode's
    (pool_split.py): a cap can leave one worker most of the pool for its whole life, which the tails do not say.
    No cap is ranked on it where the cap cannot have parted the splits (split_unranked)."""
    why = split_unranked(results, applies)
    return pool_split_note(results, sweep_name, "cap", f"no cap is named: {why}" if why else "")
