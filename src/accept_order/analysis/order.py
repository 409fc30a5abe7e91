"""Pure functions over what a run recorded: tally, fairness, and which idle-order model fits.

The verdict is not taken from the mode's name: each model predicts, for every connection, which of the
workers idle at that moment gets it, and the verdict names the model that predicted best.
- fifo: the worker idle the longest (blocking accept: waiters queue at the tail, the head is woken);
- lifo: the worker that went back to waiting most recently (one shared epoll);
- first-registered: the lowest-index idle worker (one epoll per worker with EPOLLEXCLUSIVE);
- round-robin: the worker after the one that served the previous connection, idle or not (fd-pass);
- lock-holder: the worker that served the previous connection, if idle (accept-mutex: it keeps the lock);
  the first one is whichever took the lock first.
Only connections that found two or more workers idle can tell the models apart ("informative").

One pattern is not an idle order but a count: nginx (1.21.6+, EPOLLEXCLUSIVE) re-adds its listener to its epoll
every 16 accepts (ngx_reorder_accept_events), which moves the worker to the back of the socket's exclusive wait
queue, so a sequential load shows runs of 16 per worker, after one connection per worker at start (each
worker's first accept re-adds it too). When the mode predicts that, analysis/reorder.py checks the prediction
connection by connection, start-up included. `fixed_runs` finds runs of one fixed length in any other case;
when they fit, they are the verdict (a run also fits lifo, which says less).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.measures import ConnectionRecord, Verdict, WorkerCounters
from ..core.models import IDLE_ORDERS, Model
from .chance import chance_of_fit, how_often
from .fairness import jain_index, max_min_share, tally
from .reorder import reorder_fit, reorder_pattern
from .seen import client_cpus_text, cpu_pattern, hash_pattern, like, unpredicted_pattern
from .wakeups import HERD_THRESHOLD, wakeups_per_connection, workers_woken

FIT_THRESHOLD = 0.8

MODEL_PATTERNS: dict[str, str] = {
    Model.FIFO: "rotation (FIFO among idle workers)",
    Model.LIFO: "most-recent-waiter (LIFO)",
    Model.FIRST_REGISTERED: "lowest idle index first (first-registered wins)",
    Model.ROUND_ROBIN: "round-robin (worker k mod W, chosen by the acceptor)",
    Model.LOCK_HOLDER: "the lock holder keeps them",
}
MODEL_ORDER = IDLE_ORDERS


def is_rotation(sequence: Sequence[int], workers: int) -> bool:
    """Every window of `workers` consecutive servers is `workers` distinct workers."""
    width = min(workers, len(sequence))
    return all(len(set(sequence[i : i + width])) == width for i in range(len(sequence) - width + 1))


def run_lengths(sequence: Sequence[int]) -> list[int]:
    """Lengths of the maximal runs of one worker, in order: [0, 0, 1, 0] -> [2, 1, 1]."""
    lengths: list[int] = []
    for i, w in enumerate(sequence):
        if i and sequence[i - 1] == w:
            lengths[-1] += 1
        else:
            lengths.append(1)
    return lengths


def fixed_runs(sequence: Sequence[int], workers: int | None = None) -> tuple[int, int, int] | None:
    """(k, connections that fit, connections considered) when `sequence` is runs of one worker of one fixed
    length k >= 2, else None.

    At most the first `workers` connections (default: the distinct workers seen) may be a warm-up and are left
    out, the cut that fits best wins; the last run is left out too, since the end of the load may cut it short.
    Of the rest, the connections in runs of exactly k fit; k is the length that fits the largest share. It fits
    when that share is at least FIT_THRESHOLD and there are at least two such runs: one worker taking all is a
    single run, a rotation is runs of 1, and neither is called runs.
    """
    warm_max = len(set(sequence)) if workers is None else workers
    best: tuple[float, int, int, int, int] | None = None  # share, fit, -warm-up, k, considered
    for warm in range(min(warm_max, len(sequence)) + 1):
        lengths = run_lengths(sequence[warm:])[:-1]
        considered = sum(lengths)
        for k in set(lengths):
            fit = lengths.count(k) * k
            if k < 2 or fit < 2 * k or fit < FIT_THRESHOLD * considered:
                continue
            key = (fit / considered, fit, -warm, k, considered)
            best = key if best is None else max(best, key)
    return None if best is None else (best[3], best[1], best[4])


def _runs_sequence(records: Sequence[ConnectionRecord]) -> list[int]:
    """Serving worker of each connection; a failed one between two served by the same worker counts as that
    worker's (the head of the wait queue most likely accepted it before it failed), any other is left out."""
    sequence: list[int] = []
    pending = 0  # failed connections since the last served one
    for rec in records:
        if not rec.served or rec.worker is None:
            pending += 1
            continue
        if sequence and sequence[-1] == rec.worker:
            sequence.extend([rec.worker] * pending)
        sequence.append(rec.worker)
        pending = 0
    return sequence


def _nginx_fit(sequence: Sequence[int], workers: int, expected_model: str | None) -> tuple[int, list[float]] | None:
    """(fit, odds) of nginx's own order (analysis/reorder.py) when the mode predicts it and it fits, else None."""
    if expected_model != Model.RUNS_OF_16 or workers < 2 or not sequence:
        return None
    fit, odds = reorder_fit(sequence, workers)
    return (fit, odds) if fit >= FIT_THRESHOLD * len(odds) else None


def _predict(model: str, idle: list[int], idle_since: dict[int, float], last: int | None, workers: int) -> int:
    if model == Model.ROUND_ROBIN:
        return 0 if last is None else (last + 1) % workers
    if model == Model.LOCK_HOLDER:
        return last if last in idle else min(idle)
    if model == Model.FIFO:
        return min(idle, key=lambda w: (idle_since[w], w))
    if model == Model.LIFO:
        return max(idle, key=lambda w: (idle_since[w], w))
    return min(idle)


def _walk(records: Sequence[ConnectionRecord], workers: int) -> dict[str, tuple[int, list[float]]]:
    """For each model: (connections it predicted, for each informative connection the chance that a worker
    picked at random among the idle ones is the one the model names).

    Workers are taken to have started waiting in index order (the supervisor starts them so) and to be
    busy from the start of a connection they serve until its reply ends, as the client saw it.
    """
    served = sorted((r for r in records if r.served), key=lambda r: r.start_us)
    idle_since: dict[int, float] = {w: w - workers for w in range(workers)}  # before any connection
    busy_until: dict[int, int] = {}
    last: int | None = None  # the worker that served the previous connection
    seen: set[int] = set()  # workers that have served
    fits: dict[str, int] = {m: 0 for m in MODEL_ORDER}
    odds: dict[str, list[float]] = {m: [] for m in MODEL_ORDER}
    for rec in served:
        t = rec.start_us
        for w, end in list(busy_until.items()):
            if end <= t:
                idle_since[w] = end
                del busy_until[w]
        idle = [w for w in range(workers) if w not in busy_until]
        if len(idle) >= 2:
            for model in MODEL_ORDER:
                # Nobody can say which worker takes the lock first; after that, the holder keeps it.
                first_holder = model == Model.LOCK_HOLDER and last is None and rec.worker in idle
                # Nor, for FIFO, in which order the workers first queued (a server's own lock queue, e.g.
                # uWSGI's thunder lock, is in the order they reached it): a worker's first turn fits.
                first_turn = model == Model.FIFO and rec.worker not in seen
                if first_holder or first_turn:
                    fits[model] += 1
                    odds[model].append(1.0)  # it fits whoever serves: no evidence either way
                    continue
                predicted = _predict(model, idle, idle_since, last, workers)
                fits[model] += predicted == rec.worker
                odds[model].append(1 / len(idle) if predicted in idle else 0.0)
        assert rec.worker is not None
        seen.add(rec.worker)
        last = rec.worker
        busy_until[rec.worker] = max(busy_until.get(rec.worker, 0), rec.start_us + rec.latency_us)
    return {m: (fits[m], odds[m]) for m in MODEL_ORDER}


def model_fits(records: Sequence[ConnectionRecord], workers: int) -> dict[str, tuple[int, int]]:
    """For each model: (connections it predicted, informative connections)."""
    return {m: (fit, len(odds)) for m, (fit, odds) in _walk(records, workers).items()}


def verdict(
    records: Sequence[ConnectionRecord],
    workers: int,
    expected_model: str | None,
    why: str,
    counters: Sequence[WorkerCounters] = (),
    mechanism_known: bool = True,
) -> Verdict:
    """The pattern the records show, judged by which idle-order model predicts them best, and how likely
    that is by chance. `expected_model` (from the mode's metadata) only breaks ties, sets `expected`, and
    decides whether the pattern may be named as the mechanism: a model the mode's mechanism cannot produce
    is said as what was seen ("an order like FIFO"), never as the reason."""
    sequence = [r.worker for r in records if r.served and r.worker is not None]
    counts = tally(sequence, workers)
    jain, ratio = jain_index(counts), max_min_share(counts)
    single = len(set(sequence)) == 1 and workers > 1 and len(sequence) > 1
    walked = _walk(records, workers)
    fits = {m: (fit, len(odds)) for m, (fit, odds) in walked.items()}
    informative = max((n for _, n in fits.values()), default=0)
    best: str | None = None
    chance: float | None = None
    seen = ""
    runs_sequence = _runs_sequence(records)
    nginx = _nginx_fit(runs_sequence, workers, expected_model)
    runs = fixed_runs(runs_sequence, workers) if workers > 1 and nginx is None else None
    if nginx is not None:
        # nginx's own order, start-up included: the mode's one hypothesis, checked connection by connection.
        best, informative = Model.RUNS_OF_16, len(nginx[1])
        fits[best] = (nginx[0], informative)
        chance = chance_of_fit(nginx[1], nginx[0])
    elif runs is not None:
        # Fixed-length runs: a count, not an idle order. They say more than lifo (which a run also fits).
        k, run_fit, considered = runs
        best = f"runs-of-{k}"
        fits[best] = (run_fit, considered)
        informative = considered
    elif informative:
        # Best fit wins; on a tie the mode's own model, then MODEL_ORDER.
        ranked = sorted(MODEL_ORDER, key=lambda m: (-fits[m][0], m != expected_model, MODEL_ORDER.index(m)))
        if fits[ranked[0]][0] >= FIT_THRESHOLD * informative:
            best = ranked[0]
            # The mode's own model is one hypothesis; any other is the best of MODEL_ORDER tried (Bonferroni).
            tried = 1 if best == expected_model else len(MODEL_ORDER)
            chance = min(1.0, tried * chance_of_fit(walked[best][1], fits[best][0]))
    if not sequence:  # before one worker: an attached TLS port's three resets read 'Verdict: single worker'
        pattern = "nothing served"
    elif workers == 1:
        pattern = "single worker"
    elif expected_model == Model.HASH:
        pattern, chance, seen = hash_pattern(counts)
        # The hash never looks at which workers are idle: an idle order that fits, fits by chance, and is
        # not worth a figure; the spread's test is the figure.
        best, informative, fits = None, 0, {}
    elif expected_model == Model.CLIENT_CPU:
        pattern, best, fit_cpu, known = cpu_pattern(records, workers, single)
        if best is not None:
            fits[best] = (fit_cpu, known)
            informative, chance = known, None
        seen = client_cpus_text(records)
    elif nginx is not None:
        pattern = reorder_pattern(runs_sequence, workers)
    elif runs is not None and best != expected_model:
        # Runs the mechanism does not predict (a herd's, two wakeups in a row won by the same worker):
        # seen, not the mechanism.
        pattern = like(f"runs of {runs[0]} per worker", expected_model, mechanism_known)
    elif runs is not None:
        pattern = f"runs of {runs[0]} per worker"
    elif best is not None and best != expected_model:
        pattern, seen = unpredicted_pattern(best, expected_model, single, chance, mechanism_known)
    elif best == Model.FIRST_REGISTERED and single:
        pattern = "one worker takes all (first-registered wins)"
    elif best is not None:
        pattern = MODEL_PATTERNS[best]
        if single:
            pattern += ", one worker takes all"
    elif single:
        pattern = "one worker takes all"
    else:
        pattern = "no clear order (no idle-order model fits)"
    if best is not None and chance is not None and not seen:
        seen = f"a random idle worker would fit as well {how_often(chance)}"
        # A worker's first turn (FIFO) or the lock's first holder fits whoever serves: counted among the informative
        # ones, it carries no evidence. 'run -m blocking -w 4' read '6/6 informative connections fit' of 4 such and
        # 2 that told (1 time in 16): say how many of them told nothing.
        free = sum(1 for odds in walked[best][1] if odds == 1.0) if best in walked else 0
        if free:
            turns = "a first turn, which fits" if free == 1 else "first turns, which fit"
            seen = f"{free} of them {turns} any order; {seen}"
    woken = wakeups_per_connection(counters, len(sequence), workers) if counters else None
    if woken is not None and woken >= HERD_THRESHOLD:
        pattern = (
            f"thundering herd ({workers_woken(woken, workers):.1f} workers woken per connection); order: {pattern}"
        )
    fit = fits[best][0] if best else max((f for f, _ in fits.values()), default=0)
    # A herd mode predicts no order, only that everyone wakes; a hash predicts none either.
    expected = best == expected_model or expected_model in (None, Model.HASH)
    return Verdict(
        pattern,
        best,
        fit,
        informative,
        why,
        round(jain, 4),
        None if ratio is None else round(ratio, 4),
        expected,
        None if woken is None else round(woken, 3),
        None if chance is None else float(f"{chance:.3g}"),
        seen,
    )
