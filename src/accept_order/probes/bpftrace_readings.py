"""What the accept tracepoints' bpftrace programs print (accepts.py and its subclasses): the counts at END, framed,
and periodic readings, framed and stamped, so that the last one stands when bpftrace never runs its END block.

bpftrace 0.17 (Debian's) acts on SIGINT only when the signal interrupts its epoll_wait (100 ms timeouts): one that
lands while it is out of that call (woken by a timeout and still waiting for a CPU, on a busy machine) sets its exit
flag, which nothing reads again until another signal interrupts epoll_wait or a perf event comes. Here 5 of 140
bpftraces that printed nothing at run time were still in that loop 3 s after SIGINT (loads 3.5 to 15 on 2 CPUs), one
of them 33 s after, and one SIGUSR1 then ended each (accepts.stop() sends one every KICK_S). A periodic reading is
such an event as well."""

from __future__ import annotations

import re
from collections import deque

# Framing around the map in the END block: its absence means bpftrace died before printing all counts.
COUNTS_BEGIN = "accept-order counts begin"
COUNTS_END = "accept-order counts end"
_COUNT_LINE = re.compile(rb"^@\[(\d+)\]: (\d+)$", re.MULTILINE)
READING = "accept-order reading at"  # followed by bpftrace's nsecs (CLOCK_MONOTONIC: time.monotonic()'s clock)
READING_END = "accept-order reading end"
_FRAME = re.compile(rb"^accept-order reading at (\d+)\n(.*?)^accept-order reading end$", re.MULTILINE | re.DOTALL)
_MARK = re.compile(rb"^accept-order reading (?:at (\d+)|end)$", re.MULTILINE)


def count_lines(printed: bytes | bytearray) -> dict[int, int]:
    """pid -> count from what print(@) printed of the counter's map."""
    return {int(pid): int(n) for pid, n in _COUNT_LINE.findall(printed)}


def parse_counts(stdout: bytes) -> dict[int, int] | None:
    """pid -> count from the END block's output; None when the framed block is not all there."""
    head, tail = stdout.find(COUNTS_BEGIN.encode()), stdout.rfind(COUNTS_END.encode())
    if head < 0 or tail < head:
        return None
    return count_lines(stdout[head:tail])


EMPTY_COUNTED = "accept-order empty accepts"  # END's line before the map of accepts that came back EAGAIN
_EMPTY_LINE = re.compile(rb"^@empty\[(\d+)\]: (\d+)$", re.MULTILINE)


def parse_empty(stdout: bytes) -> dict[int, int] | None:
    """pid -> accepts that came back empty (EAGAIN) from the END block (accept_program.program); None where it is
    not all there or did not count them (another program's, a periodic reading's)."""
    head, tail = stdout.find(COUNTS_BEGIN.encode()), stdout.rfind(COUNTS_END.encode())
    marked = stdout.find(EMPTY_COUNTED.encode(), max(head, 0))
    if head < 0 or tail < head or not head < marked < tail:
        return None
    return {int(pid): int(n) for pid, n in _EMPTY_LINE.findall(stdout[marked:tail])}


GAPS_COUNTED = "accept-order accept gaps"  # END's line before the map of gaps between a thread's accepts
_GAP_LINE = re.compile(rb"^@gap\[(\d+)\]: (\d+)$", re.MULTILINE)
# accept_program.GAP_BUCKETS' buckets: (first bucket, µs at its start, µs wide)
_GAP_SPANS = ((280, 100_000, 10_000), (190, 10_000, 1_000), (100, 1_000, 100), (0, 0, 10))


def parse_gaps(stdout: bytes) -> dict[int, int] | None:
    """bucket -> gaps between a thread's accept that took a connection and its next accept call, from the END block
    (accept_program.program); None where it is not all there or did not count them (another program's)."""
    head, tail = stdout.find(COUNTS_BEGIN.encode()), stdout.rfind(COUNTS_END.encode())
    marked = stdout.find(GAPS_COUNTED.encode(), max(head, 0))
    if head < 0 or tail < head or not head < marked < tail:
        return None
    return {int(k): int(n) for k, n in _GAP_LINE.findall(stdout[marked:tail])}


DESCRIPTORS_COUNTED = "accept-order accepts by descriptor"  # END's line before @on and @eon (accept_program)
_ON_LINE = re.compile(rb"^@(on|eon)\[(\d+), (\d+)\]: (\d+)$", re.MULTILINE)
Described = dict[tuple[int, int], int]  # (pid, or a thread worker's tid; the descriptor asked of + 1) -> accepts
_GAPON_LINE = re.compile(rb"^@gapon\[(\d+), (\d+), (\d+)\]: (\d+)$", re.MULTILINE)
GapsOn = dict[tuple[int, int, int], int]  # (gap bucket, pid, the descriptor its accept was asked of + 1) -> gaps


def parse_descriptors(stdout: bytes) -> tuple[Described, Described, GapsOn] | None:
    """The accepts that took a connection and those that came back empty, by (key, fd + 1), and the gaps after those
    that took one, by (bucket, pid, fd + 1), from the END block (accept_program.program's `descriptors`); None where
    it is not all there or did not count them."""
    head, tail = stdout.find(COUNTS_BEGIN.encode()), stdout.rfind(COUNTS_END.encode())
    marked = stdout.find(DESCRIPTORS_COUNTED.encode(), max(head, 0))
    if head < 0 or tail < head or not head < marked < tail:
        return None
    took: Described = {}
    empty: Described = {}
    for which, key, fd, n in _ON_LINE.findall(stdout[marked:tail]):
        (took if which == b"on" else empty)[(int(key), int(fd))] = int(n)
    gaps = {(int(k), int(pid), int(fd)): int(n) for k, pid, fd, n in _GAPON_LINE.findall(stdout[marked:tail])}
    return took, empty, gaps


def gap_us(bucket: int) -> float:
    """The middle of a gap bucket, µs (the last, 990 ms and over, read as 995 ms: a gap of a second or more reads
    short)."""
    for first, start, width in _GAP_SPANS:
        if bucket >= first:
            return start + (bucket - first) * width + width / 2
    raise ValueError(f"no gap bucket {bucket}")


def reading_probe(every_ms: int, dump: str) -> str:
    """The bpftrace probe that prints `dump` (print() of the maps) every `every_ms`, framed and stamped."""
    return f'interval:ms:{every_ms} {{ printf("{READING} %llu\\n", nsecs); {dump} printf("{READING_END}\\n"); }}\n'


def _last_frame(out: bytes | bytearray) -> re.Match[bytes] | None:
    frames = deque(_FRAME.finditer(out), maxlen=1)
    return frames[0] if frames else None


def last_reading(out: bytes | bytearray) -> tuple[float, bytes] | None:
    """(when, in time.monotonic() seconds; what it printed) of the last whole reading in `out`, else None."""
    last = _last_frame(out)
    return None if last is None else (int(last.group(1)) / 1e9, bytes(last.group(2)))


def whole_readings_end(out: bytes | bytearray) -> int:
    """Where the last whole reading in `out` begins (0: none): what precedes it may be dropped."""
    last = _last_frame(out)
    return 0 if last is None else last.start()


class ReadingClock:
    """The stamp of the last whole reading, followed across chunks of output read one after another."""

    def __init__(self) -> None:
        self.at: float | None = None  # time.monotonic() seconds of the last reading seen whole
        self._open: float | None = None  # of one whose end has not been seen yet

    def feed(self, lines: bytes | bytearray) -> None:
        """Whole lines of output, in order."""
        for mark in _MARK.finditer(lines):
            if mark.group(1) is not None:
                self._open = int(mark.group(1)) / 1e9
            elif self._open is not None:
                self.at, self._open = self._open, None


def reading_note(said: str, at: float, began: float, waited_s: float) -> str:
    """The one line a result keeps when bpftrace's END block never came (`said`: how it ended): the counts are the
    reading taken at `at`, stop() having begun at `began` (both time.monotonic()) and waited `waited_s` for one."""
    said += ": the counts are its last periodic reading, taken"
    if at >= began:
        return f"{said} {at - began:.2f} s after the counted window closed"
    return (
        f"{said} {began - at:.2f} s before the counted window closed "
        f"(the accepts since are not counted; no later reading came in the {waited_s:g} s it was waited for)"
    )
