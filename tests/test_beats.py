"""The coordinator's beats (loads/hosts/beats.py): a thread beats every host it reached, whatever the coordinator's
main thread is doing (a load, a server's launch between a ramp's steps, nothing), until the host's connection is
ended; a host's watch ends its interpreter once the beats stop for COORDINATOR_SILENT_S, LEAVE_S later while a part
that leaves on its own runs, and never once its channel ended (the connection closed: the interpreter ends anyway).

Fakes of execnet's gateway and channel; the interpreter's end (os._exit) is an exception of the test's. The beats a
host hears here are the test's, paced by it; the silences are 2 s, far above the pace, so a busy machine delays the
watch's end and never brings it early.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from waiting import wait_for

from accept_order.loads.hosts import beats
from accept_order.loads.hosts.remote_side import CLOSED


class Channel:
    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.callback: Callable[[Any], None] | None = None

    def send(self, message: Any) -> None:
        self.sent.append(message)

    def setcallback(self, callback: Callable[[Any], None], endmarker: Any) -> None:
        assert endmarker == CLOSED
        self.callback = callback


class Gateway:
    def __init__(self) -> None:
        self.channel = Channel()
        self.executed: list[str] = []

    def remote_exec(self, source: str) -> Channel:
        self.executed.append(source)
        return self.channel


def test_the_coordinator_beats_a_host_until_it_ends_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(beats, "BEAT_S", 0.01)
    beater, gateway = beats._Beater(), Gateway()
    channel = beater.add(gateway, None)  # the main thread does nothing more: the beats are the beater's own
    assert channel is gateway.channel and gateway.executed == [beats.WATCH_SOURCE]
    wait_for(lambda: len(channel.sent), lambda n: n >= 3, 30, "three beats")
    assert set(channel.sent) == {beats.BEAT}
    beater.drop(channel)
    wait_for(lambda: beater._running, lambda running: not running, 30, "the beater to end with no host left")
    beaten = len(channel.sent)
    again = beater.add(Gateway(), None)  # a host reached later (a ramp's next step) is beaten by a new thread
    wait_for(lambda: len(again.sent), lambda n: n >= 1, 30, "a beat to the host reached later")
    assert len(channel.sent) == beaten  # the host ended is beaten no more
    beater.drop(again)


class Blocked(Channel):
    """A channel whose writes block, as into a full pipe to an ssh that reads nothing, until `freed` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.freed = threading.Event()

    def send(self, message: Any) -> None:
        self.sent.append(message)
        self.freed.wait()


class Stuck:
    """The coordinator's ssh to a host, stopped: a real pipe into it (never read) that holds a message."""

    def __init__(self) -> None:
        read, write = os.pipe()
        self.reader, self.stdin = os.fdopen(read, "rb"), os.fdopen(write, "wb")
        self.stdin.write(BEAT_BYTES)
        self.stdin.flush()


BEAT_BYTES = b"\x04" + bytes(23)  # a beat's length in execnet's framing; what is in it is not read here


def test_a_host_whose_ssh_reads_nothing_holds_up_no_others_beats(monkeypatch: pytest.MonkeyPatch) -> None:
    """One thread beats every host: a write into the pipe to an ssh that reads nothing blocks once the pipe is full,
    and a beat is written only into an empty one, so a stopped ssh holds up neither the others' beats nor (its pipe
    left with room) execnet's end of its host."""
    monkeypatch.setattr(beats, "BEAT_S", 0.01)
    beater, stuck, healthy = beats._Beater(), Gateway(), Gateway()
    stuck.channel = Blocked()
    ssh = Stuck()
    try:
        assert beats.unread(ssh) == len(BEAT_BYTES)  # type: ignore[arg-type]
        beater.add(stuck, ssh)  # type: ignore[arg-type]  # the stuck host first: its beats would come first
        beater.add(healthy, None)
        wait_for(lambda: len(healthy.channel.sent), lambda n: n >= 3, 30, "three beats to the healthy host")
        assert stuck.channel.sent == []  # nothing written behind what its ssh has not read
        ssh.reader.read(len(BEAT_BYTES))  # its ssh reads again: its beats go on
        stuck.channel.freed.set()
        wait_for(lambda: len(stuck.channel.sent), lambda n: n >= 1, 30, "a beat once its ssh read what it held")
    finally:
        stuck.channel.freed.set()
        beater.drop(stuck.channel)
        beater.drop(healthy.channel)
        ssh.stdin.close()
        ssh.reader.close()


class Ended(BaseException):  # os._exit: the host's interpreter ends
    pass


def watching(monkeypatch: pytest.MonkeyPatch) -> tuple[Channel, threading.Thread, list[float]]:
    """beats.watch on a channel of the test's, in a thread; the times (monotonic) it would end the interpreter."""
    monkeypatch.setattr(beats, "COORDINATOR_SILENT_S", 2.0)
    monkeypatch.setattr(beats, "LEAVE_S", 2.0)
    monkeypatch.setattr(beats, "LOOK_S", 0.01)
    ends: list[float] = []

    def end(code: int) -> None:
        ends.append(time.monotonic())
        raise Ended

    monkeypatch.setattr(beats.os, "_exit", end)
    channel = Channel()

    def host() -> None:
        try:
            beats.watch(channel)
        except Ended:
            pass

    thread = threading.Thread(target=host, daemon=True)
    thread.start()
    wait_for(lambda: channel.callback, lambda callback: callback is not None, 30, "the watch to listen")
    return channel, thread, ends


def beat_for(channel: Channel, seconds: float) -> float:
    """Beat every 0.05 s for `seconds` (the coordinator alive); the time of the last beat."""
    assert channel.callback is not None
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        channel.callback(beats.BEAT)
        threading.Event().wait(0.05)
    channel.callback(beats.BEAT)
    return time.monotonic()


def test_a_host_ends_once_its_coordinator_is_silent(monkeypatch: pytest.MonkeyPatch) -> None:
    channel, thread, ends = watching(monkeypatch)
    beat_for(channel, 3.0)  # longer than the silence: beats keep it
    assert ends == []
    last = beat_for(channel, 0.0)
    thread.join(30)
    assert len(ends) == 1 and ends[0] - last >= 2.0, ends


def test_a_part_that_leaves_on_its_own_is_given_time_to(monkeypatch: pytest.MonkeyPatch) -> None:
    heard: list[float] = []
    with beats.hearing(lambda: heard.append(time.monotonic())):
        channel, thread, ends = watching(monkeypatch)
        last = beat_for(channel, 0.0)
        thread.join(30)
    assert heard  # the part hears the beats
    assert len(ends) == 1 and ends[0] - last >= 4.0, ends  # the silence, then LEAVE_S for the part


def test_a_host_whose_channel_ended_is_left_to_its_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    channel, thread, ends = watching(monkeypatch)
    assert channel.callback is not None
    channel.callback(CLOSED)  # the coordinator ended the connection: the interpreter ends with it
    thread.join(30)
    assert not thread.is_alive() and ends == []


class Unanswered:
    """The coordinator's end of the bootstrap's channel after the hello: nothing comes (execnet's receive times out)."""

    class TimeoutError(Exception):  # noqa: A001,N818 - execnet's name
        pass

    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.waits: list[float | None] = []

    def send(self, message: Any) -> None:
        self.sent.append(message)

    def receive(self, timeout: float | None = None) -> Any:
        self.waits.append(timeout)
        raise self.TimeoutError  # at once: the bound is read from what was asked


def test_a_hello_left_unanswered_ends_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the coordinator starts the beats (once it checked the hello), the bootstrap waits for its part for
    PART_WAIT_S only: a coordinator gone then with the way cut would leave it waiting for ever."""
    from accept_order.loads.hosts import remote_side

    def end(code: int) -> None:
        raise Ended

    monkeypatch.setattr("os._exit", end)
    channel = Unanswered()
    source = Path(remote_side.__file__).read_text()
    with pytest.raises(Ended):
        exec(compile(source, remote_side.__file__, "exec"), {"channel": channel, "__name__": "__channelexec__"})
    assert [m[0] for m in channel.sent] == ["hello"]
    assert channel.waits == [remote_side.PART_WAIT_S] and remote_side.PART_WAIT_S <= beats.COORDINATOR_SILENT_S


class Paused:
    """beats' monotonic clock, moved on LOOK_S at each reading, and `pause` s at once at its `at`-th reading: the
    host's Python stopped then (its machine paused), the beats sent meanwhile unread."""

    def __init__(self, at: int, pause: float) -> None:
        self.now, self.readings, self.at, self.pause = 0.0, 0, at, pause
        self.resumed: float | None = None

    def __call__(self) -> float:
        self.readings += 1
        self.now += self.pause if self.readings == self.at else 0.25
        if self.readings == self.at:
            self.resumed = self.now
        return self.now


def test_a_host_paused_does_not_take_its_pause_for_the_coordinators_silence(monkeypatch: pytest.MonkeyPatch) -> None:
    """Paused 11 s (past COORDINATOR_SILENT_S) after a beat: its watch does not end it as it resumes, only once the
    coordinator has said nothing for 10 s of the time it ran. The time is the clock's, not waited for."""
    clock = Paused(at=6, pause=11.0)
    monkeypatch.setattr(beats, "time", type("Time", (), {"monotonic": staticmethod(clock)}))
    monkeypatch.setattr(beats, "LOOK_S", 0.001)
    ends: list[float] = []

    def end(code: int) -> None:
        ends.append(clock.now)
        raise Ended

    monkeypatch.setattr(beats.os, "_exit", end)
    with pytest.raises(Ended):
        beats.watch(Channel())
    assert clock.resumed is not None and ends[0] > clock.resumed + beats.COORDINATOR_SILENT_S - 1.0, ends
