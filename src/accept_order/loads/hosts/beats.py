"""The coordinator's beats to the hosts it reached, and each host's watch for them: the one way a host learns that
its coordinator is gone when nothing closes its channel (the coordinator SIGKILLed or its machine gone while the way
to the host is down: ssh then sees no end before TCP gives up on the dead connection, a quarter of an hour later).

The coordinator beats every BEAT_S to every host from the moment it checked its hello to the moment it ends it, on a
channel of its own (`watch`, started by gateways once per ssh connection): during a load, while it waits for another
host's drivers, between a run's loads (a ramp's steps, a burst's sizes: a kept host idles between them; a sweep's
points, --repeat's runs and several --modes are runs of their own, each reaching its hosts anew and ending them), and
to the --observe-on host while its probes run. On the host, `watch` runs beside the part it took
(loads/hosts/load_side.py, experiments/observe/remote_side.py) for as long as the connection lives, and ends the
interpreter once the coordinator has said nothing for COORDINATOR_SILENT_S: its drivers, and observe's bpftrace, die
with it (PR_SET_PDEATHSIG). A part that leaves on its own when the beats stop (load_side: its drivers stopped and
reaped, its word sent in case only one way is cut) hears them through `hearing` and is given LEAVE_S to do so first.

    coordinator -> ("beat",)     every BEAT_S, on the watch channel

A beat is written only into an empty pipe to the host's ssh: an ssh that reads nothing (stopped, or its connection
stalled) would otherwise fill it, 64 KiB in about 45 minutes of beats, and the next write would block this one thread
(every other host's beats with it: each ended its load for want of one) and execnet's end of the host after it, on
the same pipe (the command never exited). Its beats wait meanwhile: the host hears those already in the pipe first.

A host that did not run for a while (its Python stopped, its machine paused) does not take that time for the
coordinator's silence: the beats sent meanwhile wait unread, so a look later than LATE_S credits its lateness.
"""

from __future__ import annotations

import array
import fcntl
import os
import subprocess
import termios
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from ...core.signal_order import start_thread
from .remote_side import CLOSED

BEAT_S = 1.0
COORDINATOR_SILENT_S = 10.0  # ten of the coordinator's beats missed
LEAVE_S = 5.0  # for a part that leaves on its own (its drivers reaped, its word sent) before its interpreter is ended
LATE_S = 1.0  # a look this much later than the one before is time this host did not run
LOOK_S = 0.25  # how often the host looks at the silence
BEAT = ("beat",)
# What the coordinator runs on the host, over the connection it checked: execnet starts each remote_exec in a
# thread of its own there, beside the part
WATCH_SOURCE = f"from {__name__} import watch\nwatch(channel)\n"


# --- the coordinator's side ---------------------------------------------------------------------------------------


def unread(ssh: subprocess.Popen[bytes] | None) -> int:
    """Bytes written into the pipe to the host's `ssh` that it has not read yet (0: none, or no pipe to read)."""
    if ssh is None or ssh.stdin is None:
        return 0
    count = array.array("i", [0])
    try:
        fcntl.ioctl(ssh.stdin.fileno(), termios.FIONREAD, count)
    except (OSError, ValueError):  # closed: its connection ended, the send says so
        return 0
    return count[0]


class _Beater:
    """One thread that beats to every watch channel registered, from the first registered until none is left."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._channels: dict[Any, subprocess.Popen[bytes] | None] = {}
        self._running = False

    def add(self, gateway: Any, ssh: subprocess.Popen[bytes] | None) -> Any:
        """The host's watch started over `gateway` (its hello checked: the same accept-order), and beaten through
        `ssh`'s pipe while it is empty (None: not looked at)."""
        channel = gateway.remote_exec(WATCH_SOURCE)
        with self._lock:
            self._channels[channel] = ssh
            if not self._running:  # running once started: a thread refused leaves the next add to try again
                start_thread(self._beat, "accept-order-beats")
                self._running = True
        return channel

    def drop(self, channel: Any) -> None:
        """No more beats on `channel` (None: none was started)."""
        with self._lock:
            self._channels.pop(channel, None)

    def _beat(self) -> None:
        quiet = threading.Event()  # never set: a wait of BEAT_S between beats
        while True:
            quiet.wait(BEAT_S)
            with self._lock:
                channels = list(self._channels.items())
                if not channels:
                    self._running = False
                    return
            for channel, ssh in channels:
                if unread(ssh):
                    continue  # its ssh has not read what is there (the module's docstring): a write could block
                try:
                    channel.send(BEAT)
                except (OSError, EOFError, ValueError):
                    pass  # its connection ended: dropped as its gateway closes


beater = _Beater()


# --- the host's side ----------------------------------------------------------------------------------------------


class _Heard:
    """When this host last heard its coordinator (monotonic), and the parts that hear it too."""

    def __init__(self) -> None:
        self.at = time.monotonic()
        self.parts: list[Callable[[], None]] = []

    def heard(self) -> None:
        self.at = time.monotonic()
        for part in list(self.parts):
            part()


_heard = _Heard()


def heard() -> None:
    """A beat from the coordinator (the watch channel's callback; a test's beat)."""
    _heard.heard()


@contextmanager
def hearing(part: Callable[[], None]) -> Iterator[None]:
    """`part()` at each beat while the block runs: a part that leaves on its own for want of beats, given LEAVE_S
    before the watch ends the interpreter."""
    _heard.parts.append(part)
    try:
        yield
    finally:
        _heard.parts.remove(part)


def watch(channel: Any) -> None:
    """The host's watch, for as long as the coordinator's channel lives (its end: the connection closed, the
    interpreter ends anyway): the interpreter ends once the coordinator has been silent for COORDINATOR_SILENT_S
    (and LEAVE_S more while a part that leaves on its own runs)."""
    ended = threading.Event()

    def received(message: Any) -> None:
        if message == CLOSED:
            ended.set()
        else:
            heard()

    _heard.at = time.monotonic()  # the coordinator just started it
    channel.setcallback(received, endmarker=CLOSED)
    looked = time.monotonic()
    while not ended.wait(LOOK_S):
        now = time.monotonic()
        if now - looked > LATE_S:  # this host did not run: never past now, a beat may have been heard since
            _heard.at = min(now, _heard.at + now - looked)
        looked = now
        if now - _heard.at > COORDINATOR_SILENT_S + (LEAVE_S if _heard.parts else 0.0):
            os._exit(0)
