"""The queueing model's figures for a latency run (ModelCheck), the dispatch discipline a mode's metadata
implies, and when a prediction and a measurement agree. experiments/latency/model_check.py predicts a run
from its own figures with these and says whether what was measured is within what the model predicts.

The prediction simulates (analysis/queueing.py) the run's workers under its mode's dispatch discipline,
or, when its connections carry several requests each, under `pinned` (analysis/pinned.py: each request queued
at the worker that holds its connection, the load per worker fixed by how many connections it holds), with the
run's own load (closed loop of --concurrency clients, or an open loop at --rate) and the service
time each request took as the built-in workers measured it (else a launched or attached server's busy time per
connection where its workers slept off the CPU while serving, else its CPU per connection, else the configured busy
loop). Everything the model leaves out (connection set-up, the client's own
delays, workers sharing CPUs with each other and with the load generator) is in the measurement only: a
difference bigger than the tolerance below means something besides queueing shaped the latencies.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from ..core.kinds import ModeInfo
from ..core.models import FAVOURING, Model
from ..core.spec import ServerSpec
from .chance import binomial_tail
from .queueing import DISCIPLINES, Discipline

if TYPE_CHECKING:
    pass

# The disciplines a saved model may name: the accept modes' own, and `pinned` for long-lived connections.
ModelDiscipline = Literal["shared", "favoured", "holder", "hash", "round-robin", "first", "pinned"]
# ModelCheck's fields that only a pinned model fills (empty otherwise): a file leaves them out then.
PINNED_ONLY = ("connections", "shares", "worker_p50_ms", "worker_p99_ms")
# ModelCheck's fields a file leaves out where they are None (nothing read to fill them)
WHERE_READ = (
    "cpu_share",
    "busy_waited",
    "waited_in",
    "cpu_mean_ms",
    "hold_us",
    "busy_looks",
    "slept_looks",
    "slept_share",
    "service_gaps",
)

ServiceSource = Literal["server", "busy", "cpu", "configured"]
SOURCES: dict[str, str] = {
    "server": "timed by the workers",
    "busy": "the workers' busy time per connection (their time not waiting for one)",
    "cpu": "the workers' CPU per connection",
    "configured": "the configured busy loop",
}
SEED = 1
SAMPLE = 4096  # service times drawn from: the bounded sample of the workers' histogram
MIN_TIMED = 20  # connections the workers must have timed for their times to stand for the service
# Measurements a run needs before its p99 is compared with the prediction. Under 100 the p99 is the slowest one
# measured, and a slowest one names no cause (5 requests are 'above what queueing predicts' by one stall). Above,
# order statistics (the nearest-rank p99 of n is the ceil(0.99 n)-th smallest; independent measurements, which a
# closed loop's are not, so these are the least of it): with an exponential tail, the p99 of 100 reads more than a
# factor of TOLERANCE below the true one in 28% of runs and above it in 4%; of 200 12% and 2.6%; of 300 5.6% and
# 1.6%; of 500 1.3% and 0.6%. A lognormal tail of σ 0.5: 19%, 5.9%, 2.0%, 0.2% below; σ 1 or a Pareto tail of α 3
# stay above 7% even at 500. And under 368 measurements no pair of them brackets a p99 with 95% confidence, whatever
# the shape (0.99^n > 2.5%). A verdict that names a cause must not be a coin with those odds: 500.
MIN_JUDGED = 500
SLOWEST = 100  # under this many measurements the p99 is the slowest one
# Requests simulated: ten times the run's (so the model's own noise is well under the measurement's),
# at least enough for a p99.9 of 5,000 measured, at most what takes well under a second.
FEWEST, MOST = 5_000, 100_000
# Predicted and measured agree when within this factor of each other (and so do two modes' p99 ratios). A
# band, not a confidence interval: the model's own seeded noise on a p99 is a few percent at these lengths,
# and it leaves out the connection's set-up and the client's delays (tens of µs). One run's own noise is
# larger and unknown from that run: the same `latency --modes epoll,reuseport -n 20000 -c 32 --work 1ms
# --pin`, twice on this 2-vCPU KVM guest (shared), gave p99 121 and 93 ms (epoll), 321 and 105 ms
# (reuseport). So "within" says queueing suffices; "beyond" from one run says so only with --repeat.
TOLERANCE = 1.25
NOISE = " (one run's p99 moves by more than that here: --repeat tells)"


@dataclass(frozen=True)
class ModelCheck:
    """What queueing alone predicts for one latency run: the model's inputs and its figures (ms)."""

    discipline: ModelDiscipline
    batch: int  # connections a worker takes from the shared queue at once; 0: all of them
    loop: Literal["closed-loop", "open-loop"]
    concurrency: int  # closed loop: clients
    rate: float | None  # open loop: connections per second
    workers: int
    service_source: ServiceSource
    service_count: int  # connections behind the service time (0: the configured one)
    service_mean_ms: float
    # requests simulated (the first tenth not measured, unless the open loop was overloaded); 0: closed forms
    simulated: int
    p50_ms: float
    p99_ms: float
    p999_ms: float
    dev_ms: float
    mean_ms: float
    # The fastest request the model predicts: the measured minimum beyond it is the path every connection
    # takes that queueing leaves out (set-up, the kernel, the client). None: files saved before 0.4.
    min_ms: float | None = None
    # pinned only (() otherwise, and in files before 0.5): the connections each worker held, the share of the
    # requests the model predicts it serves, and its own predicted p50 and p99 (None: it held no connection)
    connections: tuple[int, ...] = ()
    shares: tuple[float, ...] = ()
    worker_p50_ms: tuple[float | None, ...] = ()
    worker_p99_ms: tuple[float | None, ...] = ()
    # The share of a CPU the server's threads got while runnable (evidence cpu_waits), by which their CPU per
    # connection was stretched into the service time (service_source "cpu"); None: not stretched (files before it)
    cpu_share: float | None = None
    # service_source "busy" (probes/busy_waits.py): the share of the workers' busy time they were asleep off the CPU
    # while serving, the calls they slept in (most first, comma-separated), and their CPU per connection (ms, as it
    # was: not stretched as "cpu" is), which leaves those sleeps out; None: another source (and files before it)
    busy_waited: float | None = None
    waited_in: str | None = None
    cpu_mean_ms: float | None = None
    # discipline "holder": the mean while its lock is held on each connection taken, out of the service time (µs,
    # analysis/lock_holder.HOLD_US: fitted, not read from the run); None: another discipline, and files before it,
    # whose holder held it otherwise (added to the service, or not at all), so the report says nothing of it
    hold_us: float | None = None
    # service_source "busy" or "cpu" where the workers' busy time was looked at (probes/busy_waits.py): the busy looks
    # (all workers together) and those asleep off the CPU while serving, and the asleep share of the busy time (each
    # look weighted by the time it stood for), which chose between the two and say how surely
    # (analysis/busy_choice.py); None: not looked at (and files before it)
    busy_looks: int | None = None
    slept_looks: int | None = None
    slept_share: float | None = None
    # service_source "busy" where each connection's time was drawn from the kernel's gaps between a worker's accept and
    # its next (workers that serve one at a time): how many it counted; None: the busy time's mean for each (and files
    # before it)
    service_gaps: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """What a result file stores. The pinned-only fields are left out where they are empty, and cpu_share where it
        is None: a model of one request per connection is saved as before them (byte for byte)."""
        data = asdict(self)
        for name in PINNED_ONLY:
            if not data[name]:
                del data[name]
        for name in WHERE_READ:
            if data[name] is None:
                del data[name]
        return data

    @property
    def utilisation(self) -> float | None:
        """Open loop: the offered load as a share of the workers' capacity (ρ = rate × service / workers);
        at 1 or more the queue grows for as long as the run lasts. None for a closed loop (it cannot exceed).
        Pinned: the busiest worker's, fed its connections' share of the rate (ρ × max n_w / C)."""
        if self.loop != "open-loop" or self.rate is None or not self.workers:
            return None
        if self.discipline == "pinned" and sum(self.connections) > 0:
            return self.rate * self.service_mean_ms / 1000 * max(self.connections) / sum(self.connections)
        return self.rate * self.service_mean_ms / 1000 / self.workers

    @property
    def queue(self) -> str:
        """The discipline as the Model table names it: `hash`, `favoured (all)`, `shared (4)`, `holder`."""
        if self.discipline in ("hash", "round-robin", "first", "pinned") or self.batch == 1:
            return self.discipline
        return f"{self.discipline} ({self.batch or 'all'})"


def discipline_of(info: ModeInfo | None, server: ServerSpec) -> tuple[Discipline, int] | None:
    """The mode's dispatch discipline, from what its metadata says, and the batch a wakeup takes: the cap where it
    applies (ModeInfo.batches), else the mode's own (ModeInfo.own_batch)."""
    if info is None:
        return None
    batch = server.accept_batch if info.batches else info.own_batch  # asyncio's loop takes a queue until EAGAIN
    chosen: Discipline
    if info.discipline in DISCIPLINES:
        chosen = cast(Discipline, info.discipline)
    elif info.model == Model.ROUND_ROBIN and server.policy == "round-robin":
        chosen = "round-robin"
    elif info.queue == "per-worker":
        chosen = "hash"  # reuseport; steered by CPU (no order model) it is not a hash, but nearest one
    elif info.model == Model.LOCK_HOLDER:
        chosen = "holder"  # nginx's accept_mutex and the accept-mutex mode: analysis/lock_holder.py
    elif info.model in FAVOURING:
        chosen = "favoured"
    else:
        chosen = "shared"  # fifo, no order, and fd-pass's least-busy (the shortest queue: as one queue)
    return chosen, batch


def agrees(measured: float, predicted: float) -> bool:
    if predicted <= 0 or measured <= 0:
        return measured == predicted
    return abs(math.log(measured / predicted)) <= math.log(TOLERANCE)


def p99_read_low(n: int) -> float:
    """The chance that the nearest-rank p99 of n independent measurements from an exponential tail reads more than
    a factor of TOLERANCE below the true p99: at least ceil(0.99 n) of them fall below true/TOLERANCE, each with
    probability F = 1 - 100^(-1/TOLERANCE) (exponential: the true p99 is ln 100 means). Summed in logs, so that a
    run of any size has its own figure (a float product of math.comb overflowed past a few thousand)."""
    below, rank = 1 - 100 ** (-1 / TOLERANCE), math.ceil(0.99 * n)
    return binomial_tail(rank, n, below)  # rank > n * below: the upper tail


def p99_read_high(n: int, factor: float, together: int = 1) -> float:
    """The chance that the nearest-rank p99 of n measurements from an exponential tail reads more than `factor` times
    the true p99: n - ceil(0.99 n) + 1 of them fall above factor times it, each draw with probability 100^(-factor)
    (p99_read_low's other side). `together`: how many measurements one draw can slow at once (a closed loop's
    clients each have one in flight, and a stall of the host slows them all): the worst case, each draw slowing that
    many, needs ceil(slow / together) of ceil(n / together) draws. Counted as independent (together 1), runs of 200 or
    425 whose 4, 8 or 16 clients' connections stalled together read 'far above' by chance in 3 to 16% of them
    (simulated), where the odds said 1.34%."""
    above = 100 ** (-factor)
    slow = n - math.ceil(0.99 * n) + 1  # the measurements above the p99's rank: at least these read that high
    if above < 1e-15:  # no draw falls that far above (and one of 0.0, underflowed, binomial_tail reads as certain)
        return 0.0
    return binomial_tail(math.ceil(slow / together), math.ceil(n / together), above)  # above the mean: P(X >= k)


def clearly_above(n: int, measured: float, predicted: float, together: int | None = 1) -> float | None:
    """For a run under MIN_JUDGED whose p99 is above its prediction by more than TOLERANCE: the chance its p99 reads
    that far above a true one at the band's edge (predicted x TOLERANCE), where that is no more than the floor's odds
    of misreading (p99_read_low(MIN_JUDGED)), so too few measurements cannot explain it; None otherwise. 'latency
    --server nginx -w 2 --duration 50ms -c 4': 428 connections, p99 0.98 ms against 0.24 predicted (4.12x), was
    'too few connections to judge', the odds it gave those of reading below the truth, which would put it further
    above. Under SLOWEST the p99 is the slowest one, a single stall: not judged on it; nor where one stall can slow
    every measurement above the p99's rank at once (`together` that many or more: a closed loop's clients), nor with
    no bound on how many one stall slows (`together` None: an open loop's, due whether or not the last was answered).
    """
    if together is None or not SLOWEST <= n < MIN_JUDGED or predicted <= 0 or measured <= TOLERANCE * predicted:
        return None
    if n - math.ceil(0.99 * n) + 1 <= together:  # the p99 may be one stall's
        return None
    odds = p99_read_high(n, measured / (TOLERANCE * predicted), together)
    return odds if odds <= p99_read_low(MIN_JUDGED) else None


def percent(p: float) -> str:
    """A chance as a whole percentage, or 'under 0.01%' and the like where that would read 0."""
    return _percent(p, 0 if p >= 0.005 else 2)


def too_few(counts: list[int]) -> str:
    """Why runs of these many measurements (each under MIN_JUDGED) are not judged, for the model's sentence: under
    SLOWEST the p99 is the slowest one; from SLOWEST on, how often a p99 of each run's own size misreads, beside the
    floor's odds. A comparison that holds both kinds says both."""
    said = [f"under {SLOWEST} it is the slowest one"] if min(counts) < SLOWEST else []
    sizes = sorted({n for n in counts if n >= SLOWEST})
    if sizes:
        floor = p99_read_low(MIN_JUDGED)
        places = _places_apart([p99_read_low(n) for n in sizes], floor)
        odds = " and ".join(f"{_percent(p99_read_low(n), places)} of runs of {n:,}" for n in sizes)
        # The nearest rank steps with n: at 77 sizes from 381 to 499 a p99 misreads less often than at the floor
        # itself (0.5% at 499, 1.3% at 500), where 'against' would argue the other way.
        beside = "against" if any(p99_read_low(n) > floor for n in sizes) else "no more often than the floor's"
        said.append(
            f"with an exponential tail the p99 reads more than a factor of {TOLERANCE:g} below the true one in "
            f"{odds} measurements, {beside} {_percent(floor, places)} of runs of {MIN_JUDGED:,}"
        )
    return "; ".join(said)


def _places_apart(odds: list[float], floor: float) -> int:
    """The fewest decimals (0 to 2) at which each run's odds and the floor's read differently: '1% of runs of 377,
    against 1% of runs of 500' gave no reason for the floor (1.43% and 1.34%: 1.4% against 1.3%)."""
    for places in range(3):
        if all(_percent(p, places) != _percent(floor, places) for p in odds):
            return places
    return 2


def _percent(p: float, places: int = 0) -> str:
    """A chance as a percentage of so many decimals, 'under 1%' (0.1%, 0.01%) where that would read 0 (a run of
    499: 0.5%)."""
    smallest = 10.0**-places
    return f"{100 * p:.{places}f}%" if 100 * p >= smallest / 2 else f"under {smallest:g}%"
