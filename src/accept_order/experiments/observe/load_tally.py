"""What observe's looks at the server's load found so far (load.py's LoadSampler takes them): per worker process the
connections held now and at most and what they carried, the closes counted, lost and left out, and the result's
fields and notes made of them."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...probes.tcp_destroy import DestroyWatch
from .load_fields import LoadSummary, per_process
from .server import Watched

UNANNOUNCED = "what a connection carried after its last look before it closed is not counted: the kernel's "
UNANNOUNCED += "announcements of closed sockets (sock_diag's TCP destroy groups) could not be joined ({})"


@dataclass
class Carried:
    """One worker process's load so far: connections held at the last sample and at most, and what its
    connections moved while observed."""

    held: int = 0
    peak: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    segments_in: int = 0
    segments_out: int = 0
    connections: set[int] = field(default_factory=set)  # cookies of the connections seen held by it
    interval_bytes_in: int = 0  # since the last interval closed


class LoadTally:
    """Per worker process: connections held now and at most, and what its connections carried; how the looks
    went and what the kernel's announcements of closes added. LoadSampler fills it."""

    def __init__(self, watched: Watched) -> None:
        self.watched = watched
        self.carried = {pid: Carried() for pid in watched.workers}
        self.missing: str | None = None  # why the load could not be read (then nothing is)
        self.samples = 0
        self.every_s = 0.0  # the pace the last sample's CPU cost allows (see sampling.paced)
        self.longest_s = 0.0  # the longest wait between two samples so far: the pace actually used
        self.sampled = False  # a sample was taken since the last interval closed
        self.new_seen: set[int] = set()  # cookies of connections accepted in the window seen held by a worker
        self.closed_busy = 0  # connections that closed between two samples while busy
        self.closed_busy_bytes_in = 0  # the bytes in counted on them (their tails are not)
        self._first_at = self._last_at = 0.0
        # the kernel's announcements of closes (see the module doc): None until open_closes() joined them
        self.closes: DestroyWatch | None = None
        self.closes_missing: str | None = None  # why they are not read
        self.closes_counted = 0  # connections closed while observed, counted to their close
        self.closes_lost = 0  # announcements the kernel dropped (its buffer full), read at the end
        self.closes_skipped = 0  # announcements not read for the watch's budget, read at the end
        self.closed_unlooked = 0  # announced, seen by no look, holder not known: in no worker's share
        self.closed_unlooked_bytes_in = 0
        self._unseen: tuple[int, int] | None = None  # announced undecoded in the window (count, bytes in), settled
        self.closes_late = self.closes_late_bytes_in = 0  # read while settling, of sockets no look saw: left out

    @property
    def readable(self) -> bool:
        return self.missing is None

    def interval(self) -> tuple[dict[int, int], dict[int, int]] | None:
        """(held now, bytes in since the last call) per worker process; None when no sample was taken since
        the last call (a slow sample is paced to fewer than one an interval)."""
        if not self.sampled or self.missing is not None:
            return None
        self.sampled = False
        held = {pid: c.held for pid, c in self.carried.items()}
        moved = {pid: c.interval_bytes_in for pid, c in self.carried.items()}
        for carried in self.carried.values():
            carried.interval_bytes_in = 0
        return held, moved

    def seen(self, pid: int) -> int:
        """The connections worker `pid` was seen holding by a look so far (its 'seen' in the load table)."""
        carried = self.carried.get(pid)
        return len(carried.connections) if carried is not None else 0

    def of(self, pid: int, per_process: bool) -> dict[str, int | None]:
        """The result's load fields of one worker (ObservedWorker's); none (None) when not read, or when the
        workers are threads of one process (their fd table is one: the load is the process's, in a note)."""
        if self.missing is not None or not self.samples or per_process or pid not in self.carried:
            return {}
        c = self.carried[pid]
        return {
            "connections_held": c.held,
            "connections_held_peak": c.peak,
            "connections_observed": len(c.connections),
            "bytes_in": c.bytes_in,
            "bytes_out": c.bytes_out,
            "segments_in": c.segments_in,
            "segments_out": c.segments_out,
        }

    def summary(self) -> LoadSummary:
        """The result's fields about the sampling: how many looks, their pace (the average time between two)
        and the longest time between two, how many of the connections accepted while observed one of them saw
        held, and the connections that closed between two while busy (what they carried after their last look
        is not counted) with the bytes in counted on them."""
        if self.missing is not None or not self.samples:
            return {"load_samples": 0}
        gaps = self.samples - 1
        pace = (self._last_at - self._first_at) / gaps if gaps else self.every_s
        return {
            "load_samples": self.samples,
            "load_every_s": round(pace, 3),
            "load_longest_s": round(self.longest_s, 3) if gaps else None,
            "accepted_seen": len(self.new_seen),
            "closed_busy": self.closed_busy,
            "closed_busy_bytes_in": self.closed_busy_bytes_in,
            **self._closes(),
            **(per_process(self.carried.values()) if self.watched.threaded else {}),
        }

    def _closes(self) -> LoadSummary:
        if self.closes is None:
            return {}
        # settled: those of the window (see settle); before (a snapshot while observing): all so far
        unseen, unseen_bytes_in = self._unseen or (self.closes.unseen, self.closes.unseen_bytes_in)
        return {
            "closes_counted": self.closes_counted,
            "closes_lost": self.closes_lost,
            "closes_skipped": self.closes_skipped,
            "closed_unlooked": self.closed_unlooked + unseen,  # those counted undecoded too
            "closed_unlooked_bytes_in": self.closed_unlooked_bytes_in + unseen_bytes_in,
            "closes_late": self.closes_late,
            "closes_late_bytes_in": self.closes_late_bytes_in,
        }

    def notes(self, threaded: bool, program: str) -> list[str]:
        """What the result must say about the load: why it is missing, or that it is per process."""
        if self.missing is not None:
            return [f"the load each worker carries was not read: {self.missing}"]
        if not self.samples:
            return []
        notes = [] if self.closes_missing is None else [UNANNOUNCED.format(self.closes_missing)]
        if not threaded:
            return notes
        said = [
            f"pid {pid} holds {c.held:,} connections ({c.peak:,} at most), which received {c.bytes_in:,} bytes and "
            f"sent {c.bytes_out:,}"
            for pid, c in self.carried.items()
        ]
        return notes + [
            f"{program}'s threads share one fd table, so the load is per process, not per thread: {'; '.join(said)}"
        ]
