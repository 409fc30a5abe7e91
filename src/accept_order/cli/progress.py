"""Which of a command's N runs is under way, and about how long the rest will take, on stderr only.

On a terminal this is the progress bars' label ("run 3 of 10, about 1 min left: epoll: connections"),
recomputed as the bar is redrawn. Off a terminal (piped, in CI, under nohup) nothing redraws, so a heartbeat
line is written every HEARTBEAT_S seconds instead ("accept-order: run 3 of 10, 42 s elapsed, about 1 min
left"): a long `--repeat` is never silent for minutes.

The time left is what each run still to do will take, judged from the runs finished so far: their mean, or,
where the runs differ in size (a burst's clients), a line through their times by size (a fixed part, start-up
and settling, and a part per client), so that three bursts of 1000 do not promise a burst of 25000 in the same
time. Nothing is said before a run has finished (there is nothing to go on), "up to" where the work may end
sooner (a ramp stops at its knee), and a run that has outlasted its estimate makes it a lower bound ("more
than ... left") instead of counting down to "0 s left" while the work goes on. What a bar that is full is
still waiting for is cli/bars.py's."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from ..core.finished import outcome_text
from ..core.signal_order import start_thread
from .bars import duration_text

HEARTBEAT_S = 10.0


def _fit(sizes: Sequence[float], seconds: Sequence[float]) -> Callable[[float], float]:
    """Seconds a run of `size` takes, from finished runs: a + b * size through them when their sizes differ
    (least squares, neither part below 0), else in proportion to size."""
    n = len(sizes)
    mean_s, mean_t = sum(sizes) / n, sum(seconds) / n
    spread = sum((s - mean_s) ** 2 for s in sizes)
    if spread > 0:
        slope = sum((s - mean_s) * (t - mean_t) for s, t in zip(sizes, seconds, strict=True)) / spread
        fixed = mean_t - slope * mean_s
        if slope >= 0 and fixed >= 0:
            return lambda size: fixed + slope * size
    per_unit = sum(seconds) / max(sum(sizes), 1e-9)
    return lambda size: per_unit * size


def reached_text(done: int, total: float | None, unit: str) -> str:
    """`2,950 of 20,000 connections: 0 served, 2,950 failed (timeout)`: a count alone read as all was well
    while every connection waited out its timeout."""
    count = f"{done:,} of {int(total):,} {unit}" if total is not None else f"{done:,} {unit}"
    outcome = outcome_text(done)
    return f"{count}: {outcome}" if outcome else count


class RunProgress:
    """Run k of N: `next()` as each run starts. `clock` and `write` are the test's to replace. `sizes`: how big
    each run is, in order (a burst's clients; None: all alike); `may_end_early`: the work can stop before the
    last run (a ramp at its knee), so the estimate is an upper bound."""

    def __init__(
        self,
        total: int,
        clock: Callable[[], float] = time.monotonic,
        write: Callable[[str], None] | None = None,
        every: float = HEARTBEAT_S,
        noun: str = "run",
        sizes: Sequence[float] | None = None,
        may_end_early: bool = False,
    ) -> None:
        self.total = total
        self.noun = noun  # what is counted: runs, or a ramp's steps
        self.current = 0
        self.clock = clock
        self.write = write
        self.every = every
        self.sizes = list(sizes) if sizes else None
        self.may_end_early = may_end_early
        self.took: list[tuple[float, float]] = []  # finished runs: (size, seconds)
        self.reached: str | None = None  # how far the run under way has got, as its load's ticks say (bars)
        self.started = clock()
        self.run_started = self.started
        self.last_beat = self.started

    def next(self) -> None:
        self.start(self.current + 1)

    def start(self, number: int) -> None:
        now = self.clock()
        if 1 <= self.current < number:  # the run under way has finished
            self.took.append((self.size(self.current), now - self.run_started))
        self.current = number
        self.run_started = now
        self.reached = None  # the last run's count is not this one's

    def size(self, number: int) -> float:
        if self.sizes is None or not self.sizes:
            return 1.0
        return float(self.sizes[(number - 1) % len(self.sizes)])  # a --repeat goes round them again

    def _left(self) -> tuple[float, bool] | None:
        """(seconds, exact): still to go, and whether that counts the current run too (False: it has outlasted
        its estimate, and only the runs after it are counted); None before a run has finished."""
        if not self.took or self.total < 1:
            return None
        took = _fit([s for s, _ in self.took], [t for _, t in self.took])
        later = sum(took(self.size(k)) for k in range(max(self.current, 1) + 1, self.total + 1))
        this = took(self.size(max(self.current, 1))) - (self.clock() - self.run_started)
        return (later + this, True) if this >= 0 else (later, False)

    def left(self) -> float | None:
        """Seconds still to go as estimated; None when there is nothing to go on, or the run under way has
        outlasted its estimate (then only a lower bound is known: see `estimate`)."""
        left = self._left()
        return left[0] if left is not None and left[1] else None

    def estimate(self) -> str | None:
        """`about 3 min left`, `up to about 40 s left` (it may end sooner), `more than 20 s left` (the run
        under way took longer than the others said); None when nothing honest can be said."""
        left = self._left()
        if left is None:
            return None
        seconds, exact = left
        if exact and seconds < 1:
            return None  # nearly done: the bar says with what
        if exact:
            return f"{'up to ' if self.may_end_early else ''}about {duration_text(seconds)} left"
        if seconds < 1 or self.may_end_early:
            return None  # the last run is late, or what follows may not run at all: no figure
        return f"more than {duration_text(seconds)} left"

    def status(self) -> str:
        """`run 3 of 10, 42 s elapsed, about 1 min left`; of one run, how far it has got: `31,000 of 100,000
        connections: 31,000 served, 0 failed, 42 s elapsed` (a single latency run off a terminal said nothing for
        its whole minute), and of several, the one under way's after its number (`run 3 of 10: 2,950 of ...`)."""
        elapsed = duration_text(self.clock() - self.started)
        if self.total <= 1:
            return f"{self.reached}, {elapsed} elapsed" if self.reached else f"{elapsed} elapsed"
        which = f"{self.noun} {max(self.current, 1)} of {self.total}"
        text = f"{which}: {self.reached}, {elapsed} elapsed" if self.reached else f"{which}, {elapsed} elapsed"
        left = self.estimate()
        return text if left is None else f"{text}, {left}"

    def ticking(
        self, update: Callable[..., None], total: float | None, unit: str = "connections"
    ) -> Callable[[int, float], None]:
        """A load's tick that keeps how far the run under way has got (and how its finished ones ended) for the
        heartbeat, then passes it on to `update` (its bar's; a no-op off a terminal). `total`: the run's count,
        None where it runs for a time."""

        def tick(done: int, elapsed: float = 0.0) -> None:
            self.reached = reached_text(done, total, unit)
            update(done, elapsed)

        return tick

    def label(self, text: str) -> str:
        """A progress bar's label: `run 2 of 5, about 1 min left: epoll: 1000 clients` (just `text` for one run)."""
        if self.total <= 1:
            return text
        left = self.estimate()
        eta = "" if left is None else f", {left}"
        return f"{self.noun} {max(self.current, 1)} of {self.total}{eta}: {text}"

    def live(self, text: str) -> Callable[[], str]:
        """The label as a bar redraws it: its estimate counts down with the run."""
        return lambda: self.label(text)

    def beat(self) -> bool:
        """Write the status line when `every` seconds have passed since the last one; True if it did."""
        now = self.clock()
        if self.write is None or now - self.last_beat < self.every:
            return False
        self.last_beat = now
        self.write(f"accept-order: {self.status()}")
        return True

    @contextmanager
    def heartbeat(self) -> Iterator[None]:
        """Off a terminal, a thread that beats while the runs go on; on one, the bars say it instead."""
        if self.write is None:
            from .output import note, stderr

            if stderr().is_terminal:
                yield
                return
            self.write = note
        stop = threading.Event()

        def loop() -> None:
            while not stop.wait(1.0):  # checks each second; writes every `every` seconds of the clock
                self.beat()

        beater = start_thread(loop, "accept-order-heartbeat")
        try:
            yield
        finally:
            stop.set()
            beater.join()
