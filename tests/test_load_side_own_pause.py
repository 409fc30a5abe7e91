"""A client host's load is stopped for want of the coordinator's beats (load_side.COORDINATOR_SILENT_S) only when
the coordinator was silent, not when the host itself did not run: its Python stopped, or its machine paused, the
beats sent meanwhile wait unread in its pipe, and its next tick, coming before its receiver thread has read them, saw
the time it was stopped as the coordinator's silence. A host paused past 10 s is lost to the coordinator in any case;
one paused 9.5 s, which the coordinator keeps, stopped its load on its own and said 'no word from the coordinator'.

take_part is driven here with a clock of the test's own and a generator that ticks on it: the pause is a jump of that
clock, not a wait.
"""

from __future__ import annotations

import pickle
import time
import types
from collections.abc import Callable
from typing import Any

import pytest

from accept_order.loads.hosts import beats, load_side


class Clock:
    now = 1000.0

    def monotonic(self) -> float:
        return self.now


class Channel:
    """The coordinator's end as take_part sees it: the load, the go once the host is ready; beats when told."""

    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.callback: Callable[[Any], None] | None = None

    def receive(self) -> Any:
        return ("load", pickle.dumps((None, None, None, None)))

    def setcallback(self, callback: Callable[[Any], None], endmarker: Any) -> None:
        self.callback = callback

    def send(self, message: Any) -> None:
        self.sent.append(message)
        if message == ("ready",):
            assert self.callback is not None
            self.callback(("go", time.time() - 1.0))

    def beat(self) -> None:
        beats.heard()  # a beat on the host's watch channel (loads/hosts/beats.py), as its callback hears it


class Tally(int):
    served = 0
    timed_out = 0


def generator_ticking(clock: Clock, channel: Channel, times: list[tuple[float, bool]]) -> type:
    """A LoadGenerator whose run ticks at each (time, beat heard just after this tick) of `times`."""

    class Generator:
        def __init__(self, *given: Any) -> None:
            pass

        def __enter__(self) -> Generator:
            return self

        def __exit__(self, *exc: Any) -> None:
            pass

        def tally(self) -> Tally:
            return Tally(0)

        def run(self, tick: Callable[[int, float], None]) -> Any:
            for at, beat in times:
                clock.now = at
                try:
                    tick(0, 0.0)
                except KeyboardInterrupt:
                    return types.SimpleNamespace(wall_s=0.0, stopped=True)
                if beat:
                    channel.beat()
            return types.SimpleNamespace(wall_s=0.0, stopped=False)

    return Generator


class Left(BaseException):  # as os._exit, not caught as a failure
    pass


def run_part(monkeypatch: pytest.MonkeyPatch, times: list[tuple[float, bool]]) -> list[Any]:
    clock, channel = Clock(), Channel()
    monkeypatch.setattr(load_side, "time", types.SimpleNamespace(monotonic=clock.monotonic, time=time.time))
    monkeypatch.setattr(load_side, "make_room", lambda load: load)
    monkeypatch.setattr(load_side, "LoadGenerator", generator_ticking(clock, channel, times))

    def leave(code: int) -> None:
        raise Left

    monkeypatch.setattr(load_side.os, "_exit", leave)
    try:
        load_side.take_part(channel)
    except Left:
        channel.sent.append("left")
    said = [m if isinstance(m, str) or m[0] == "error" else m[0] for m in channel.sent]
    return [m for m in said if m != "tick"]


def test_a_host_paused_does_not_take_its_pause_for_the_coordinators_silence(monkeypatch: pytest.MonkeyPatch) -> None:
    # beats every second up to 1001, then the host stopped 9.5 s: its next tick comes before the beats sent meanwhile
    # are read (11.1 s after the last one heard), and the load goes on to its end
    times = [(1000.0 + t / 10, t % 10 == 0) for t in range(11)] + [(1010.6 + t / 10, t % 10 == 5) for t in range(30)]
    assert run_part(monkeypatch, times) == ["ready", "result"]


def test_a_coordinator_silent_while_the_host_ticks_stops_the_load(monkeypatch: pytest.MonkeyPatch) -> None:
    # a beat at 1000 only, the host ticking every 0.1 s after it: past 10 s of silence it stops, says so and exits
    times = [(1000.0 + t / 10, t == 0) for t in range(120)]
    stopped = ("error", "no word from the coordinator for 10 s: it stopped its load")
    assert run_part(monkeypatch, times) == ["ready", stopped, "left"]
