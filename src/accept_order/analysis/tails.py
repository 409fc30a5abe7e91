"""Which of several latency runs had the tighter tail, and by how much.

Every figure the verdict summarises is compared, pair by pair: p50, p99, p99.9, deviation and average. A run
has the tightest tail only when, against every other run, it is lower by more than CLEAR on at least one
tail figure (p99, p99.9, deviation) and higher by more than CLEAR on none. "No clear difference" is said
only when no tail figure of any pair differs by more than CLEAR; anything else is "mixed", each side named
with the figures it is lower on (a run lower on p99 but wider in deviation has no tighter tail, it has a
different one).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any, Protocol

from ..core.histogram import LatencyHistogram
from ..core.protocol import ABORTED
from ..core.spec import ServerSpec
from ..core.text import and_join, plural


class LatencyRun(Protocol):
    """What the verdict reads of a latency run (experiments/latency/result.py's LatencyResult has it)."""

    @property
    def server(self) -> ServerSpec: ...

    @property
    def histogram(self) -> LatencyHistogram: ...

    @property
    def ok(self) -> int: ...

    @property
    def errors(self) -> Mapping[str, int]: ...

    @property
    def interrupted(self) -> bool: ...


CLEAR = 1.1  # figures within 10% of each other are no clear difference on a noisy machine

# (key, words): the figures compared, in the order they are named.
FIGURES = (("p50", "p50"), ("p99", "p99"), ("p99.9", "p99.9"), ("dev", "deviation"), ("avg", "average"))
TAIL = ("p99", "p99.9", "dev")
_WORDS = dict(FIGURES)


@dataclass(frozen=True)
class TailVerdict:
    """Which mode had the tighter tail (None unless one clearly had), and by how much (ratios of the others
    to it, or to the lowest p99 when none had); kind is "clear", "tight" (no clear difference) or "mixed", or
    "paced" where the load generator set every run's pace (experiments/generator_pace.py: none is named)."""

    tightest: str | None
    ratios: dict[str, dict[str, float]]  # mode -> {"p50": r, "p99": r, ...} relative to the reference run
    text: str
    kind: str = "tight"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


TIGHTEST = "had the tightest tail of these runs"  # what the figures show; how sure, analysis/one_run.py


def _ratio(a: float, b: float) -> float:
    if b > 0:
        return a / b
    return 1.0 if a == 0 else math.inf


def figures(result: LatencyRun) -> dict[str, float]:
    """The figures compared, in µs."""
    return histogram_figures(result.histogram)


def histogram_figures(h: LatencyHistogram) -> dict[str, float]:
    """The figures compared of one histogram, in µs."""
    return {
        "p50": float(h.percentile(50)),
        "p99": float(h.percentile(99)),
        "p99.9": float(h.percentile(99.9)),
        "dev": float(h.stdev_us),
        "avg": float(h.mean_us),
    }


@dataclass(frozen=True)
class Pair:
    """Two runs' figures side by side: which figures each is lower on by more than CLEAR, and which are within."""

    a: str
    b: str
    fa: dict[str, float]
    fb: dict[str, float]

    def lower(self, side: str) -> list[str]:
        """The figures on which `side` (a or b) is lower than the other by more than CLEAR."""
        mine, theirs = (self.fa, self.fb) if side == "a" else (self.fb, self.fa)
        return [k for k, _ in FIGURES if _ratio(theirs[k], mine[k]) >= CLEAR]

    def within(self) -> list[str]:
        differ = set(self.lower("a")) | set(self.lower("b"))
        return [k for k, _ in FIGURES if k not in differ]

    def tighter(self) -> str | None:
        """The run whose tail is clearly tighter: lower on a tail figure, higher on nothing."""
        la, lb = self.lower("a"), self.lower("b")
        if any(k in TAIL for k in la) and not lb:
            return self.a
        if any(k in TAIL for k in lb) and not la:
            return self.b
        return None

    def tails_differ(self) -> bool:
        return any(k in TAIL for k in self.lower("a") + self.lower("b"))


def _names(keys: Sequence[str]) -> str:
    return and_join([_WORDS[k] for k in keys])


def _values(keys: Sequence[str], mine: dict[str, float], theirs: dict[str, float]) -> str:
    """'p99 (3.31 vs 4.22 ms, 0.78×) and deviation (...)': mine first, the ratio mine/theirs."""
    parts = [f"{_WORDS[k]} ({mine[k] / 1000:.2f} vs {theirs[k] / 1000:.2f} ms, {_ratio(mine[k], theirs[k]):.2f}×)"
             for k in keys]  # fmt: skip
    return and_join(parts)


def _is_are(keys: Sequence[str]) -> str:
    return "is" if len(keys) == 1 else "are"


def _within(keys: Sequence[str], a: str, fa: dict[str, float], b: str, fb: dict[str, float]) -> str:
    """'p50 and p99 within 10% (blocking 2.00, 4.00 ms; reuseport 2.00, 3.90 ms)'."""

    def ms(f: dict[str, float]) -> str:
        return ", ".join(f"{f[k] / 1000:.2f}" for k in keys) + " ms"

    return f"{_names(keys)} within {100 * (CLEAR - 1):.0f}% ({a} {ms(fa)}; {b} {ms(fb)})"


def pair_text(pair: Pair) -> str:
    """Each side with the figures it is lower on, then what is within CLEAR (first-named run's value first)."""
    clauses = []
    for side, name, mine, theirs in (("a", pair.a, pair.fa, pair.fb), ("b", pair.b, pair.fb, pair.fa)):
        keys = pair.lower(side)
        if set(TAIL) <= set(keys):  # said as such: one side's whole tail, the other's middle, is not a muddle
            clauses.append(f"{name}'s whole tail is lower: {_values(keys, mine, theirs)}")
        elif keys:
            clauses.append(f"{name}'s {_values(keys, mine, theirs)} {_is_are(keys)} lower")
    within = pair.within()
    if within:
        clauses.append(_within(within, pair.a, pair.fa, pair.b, pair.fb))
    return "; ".join(clauses)


def _reference_ratios(ref: str, figs: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    return {name: {k: _ratio(f[k], figs[ref][k]) for k, _ in FIGURES} for name, f in figs.items() if name != ref}


def failed_before_stop(run: LatencyRun) -> int:
    """The connections a run failed on its own: not those in flight when a stop ended it (aborted)."""
    return sum(n for error, n in run.errors.items() if error != ABORTED)


def tail_verdict(results: Sequence[LatencyRun], names: Sequence[str] | None = None) -> TailVerdict:
    """Compare the runs that served requests pair by pair on p50, p99, p99.9, deviation and average; name
    the tightest tail only when it is so against every other run. `names` label the runs (the server's
    label by default)."""
    labels = list(names) if names is not None else [r.server.label for r in results]
    # A run Ctrl-C cut short ran for less time than the others, and its connections in flight were counted as
    # aborted by the stop, not lost by the server: it is not compared, for that reason, not for a loss. What it
    # failed before the stop is its own, and said.
    cut = [(label, r) for label, r in zip(labels, results, strict=True) if r.interrupted]
    if cut:
        ran = [(label, r) for label, r in zip(labels, results, strict=True) if not r.interrupted]
        said = f"{', '.join(label for label, _ in cut)} {'was' if len(cut) == 1 else 'were'} cut short by the stop"
        before = [
            f"{label} lost {plural(n, 'connection')} before the stop"
            for label, r in cut
            if (n := failed_before_stop(r))
        ]
        if sum(1 for _, r in ran if r.ok) < 2:  # not 'need two runs that served': the cut ones served
            return TailVerdict(None, {}, "; ".join([f"no tail to compare: {said}", *before]))
        verdict = tail_verdict([r for _, r in ran], [label for label, _ in ran])
        note = f" ({'; '.join([f'{said}: not compared', *before])})"
        return TailVerdict(verdict.tightest, verdict.ratios, verdict.text + note, verdict.kind)
    runs = [(label, r) for label, r in zip(labels, results, strict=True) if r.ok]
    # A run that lost connections left its slowest requests out of its histogram: it cannot win on latency.
    # Compare those that served every connection when two or more did, and say who was left out and why.
    lost = [(label, r) for label, r in runs if sum(r.errors.values())]
    whole = [(label, r) for label, r in runs if not sum(r.errors.values())]
    if lost and len(whole) >= 2:
        verdict = tail_verdict([r for _, r in whole], [label for label, _ in whole])
        left = "; ".join(f"{label} lost {sum(r.errors.values())} connections" for label, r in lost)
        note = f" ({left}: its latency leaves them out, so it is not compared)"
        return TailVerdict(verdict.tightest, verdict.ratios, verdict.text + note, verdict.kind)
    if lost and len(whole) == 1:
        label = whole[0][0]
        left = ", ".join(f"{name} lost {sum(r.errors.values())}" for name, r in lost)
        return TailVerdict(
            label, {}, f"{label} is the only one that served every connection ({left}): no tail to compare", "clear"
        )
    if len(runs) < 2:
        return TailVerdict(None, {}, "need at least two runs that served requests to compare tails")
    if lost:  # every run lost some: none is named on tails that each leave out their own slowest (as sweep's caps)
        measured = _compared(runs)
        left = ", ".join(f"{label} {sum(r.errors.values())}" for label, r in lost)
        text = (
            f"no tail named: every run lost connections ({left}), and each one's latency leaves its own out; "
            f"as measured, {measured.text}"
        )
        return TailVerdict(None, measured.ratios, text, "mixed")
    return _compared(runs)


def _compared(runs: Sequence[tuple[str, LatencyRun]]) -> TailVerdict:
    """The runs' tails compared pair by pair, whatever each lost."""
    figs = {label: figures(r) for label, r in runs}
    pairs = [Pair(a, b, figs[a], figs[b]) for (a, _), (b, _) in combinations(runs, 2)]
    for label, _ in runs:
        mine = [p for p in pairs if label in (p.a, p.b)]
        if all(p.tighter() == label for p in mine):
            clauses = []
            for p in mine:
                other, me, them = (p.b, p.fa, p.fb) if p.a == label else (p.a, p.fb, p.fa)
                side = "a" if p.a == label else "b"
                keys = p.lower(side)
                clause = f"its {_values(keys, me, them)} {_is_are(keys)} lower than {other}'s"
                within = p.within()
                if within:
                    clause += ", " + _within(within, label, me, other, them)
                clauses.append(clause)
            text = f"{label} {TIGHTEST}: " + "; ".join(clauses)
            return TailVerdict(label, _reference_ratios(label, figs), text, "clear")
    ref = min(figs, key=lambda label: (figs[label]["p99"], figs[label]["dev"]))
    ratios = _reference_ratios(ref, figs)
    percent = f"{100 * (CLEAR - 1):.0f}%"
    if not any(p.tails_differ() for p in pairs):
        every = all(len(p.within()) == len(FIGURES) for p in pairs)
        head = f"no clear difference in the tails ({'all' if every else 'p99, p99.9 and deviation'} within {percent})"
        return TailVerdict(None, ratios, head + ": " + "; ".join(_several(pairs)), "tight")
    return TailVerdict(None, ratios, "mixed: " + "; ".join(_several(pairs)), "mixed")


def _several(pairs: Sequence[Pair]) -> list[str]:
    """One clause per pair, prefixed by who is compared when there are several pairs."""
    if len(pairs) == 1:
        return [pair_text(pairs[0])]
    return [f"{p.a} vs {p.b}: {pair_text(p)}" for p in pairs]
