"""Which of a command's N runs is under way, and about how long the rest will take, on stderr only.

On a terminal this is the progress bars' label ("run 3 of 10, about 1 min left: epoll: connections").
Off a terminal (piped, in CI, under nohup) nothing redraws, so a heartbeat line is written every
HEARTBEAT_S seconds instead ("accept-order: run 3 of 10, 42 s elapsed, about 1 min left"): a long
`--repeat` is never silent for minutes. The time left is the mean of the runs finished so far times the
runs still to do (less what the current one has already taken): an estimate, said as "about"."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

HEARTBEAT_S = 10.0


def duration_text(seconds: float) -> str:
    """`42 s`, `3 min`, `1 h 5 min`: as precise as a rough estimate deserves."""
    if seconds < 90:
        return f"{max(seconds, 0):.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds // 3600:.0f} h {seconds % 3600 / 60:.0f} min"


class RunProgress:
    """Run k of N: `next()` as each run starts. `clock` and `write` are the test's to replace."""

    def __init__(
        self,
        total: int,
        clock: Callable[[], float] = time.monotonic,
        write: Callable[[str], None] | None = None,
        every: float = HEARTBEAT_S,
        noun: str = "run",
    ) -> None:
        self.total = total
        self.noun = noun  # what is counted: runs, or a ramp's steps
        self.current = 0
        self.clock = clock
        self.write = write
        self.every = every
        self.started = clock()
        self.run_started = self.started
        self.last_beat = self.started

    def next(self) -> None:
        self.start(self.current + 1)

    def start(self, number: int) -> None:
        self.current = number
        self.run_started = self.clock()

    def left(self) -> float | None:
        """Seconds still to go, once a run has finished (before that there is nothing to go on)."""
        finished = self.current - 1
        if finished < 1 or self.total < 1:
            return None
        per_run = (self.run_started - self.started) / finished
        return max(per_run * (self.total - finished) - (self.clock() - self.run_started), 0.0)

    def status(self) -> str:
        """`run 3 of 10, 42 s elapsed, about 1 min left`."""
        elapsed = duration_text(self.clock() - self.started)
        text = f"{self.noun} {max(self.current, 1)} of {self.total}, {elapsed} elapsed"
        left = self.left()
        return text if left is None else f"{text}, about {duration_text(left)} left"

    def label(self, text: str) -> str:
        """A progress bar's label: `run 2 of 5, about 1 min left: epoll: 1000 clients` (just `text` for one run)."""
        if self.total <= 1:
            return text
        left = self.left()
        eta = "" if left is None else f", about {duration_text(left)} left"
        return f"{self.noun} {max(self.current, 1)} of {self.total}{eta}: {text}"

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

        beater = threading.Thread(target=loop, name="accept-order-heartbeat", daemon=True)
        beater.start()
        try:
            yield
        finally:
            stop.set()
            beater.join()
