"""Workers known only by their replies, counted the same way in every client process (and on every host).

A server elsewhere (--target) names the worker that served a connection in its reply: `worker I pid P`
(the built-in `serve`) or `worker P` (a launched nginx's handler). A client process cannot turn a bare pid
into a worker index on its own: the order in which pids first answered differs from one driver to the next,
so their per-index counts could not be added. Each driver therefore counts by a *reply key* that is the
same everywhere (the pid, with the index the reply names, if it names one), and the parent places the keys
on worker indices once, after the load (`ReplyWorkers.place`): a named index where the reply says, the rest
by pid. Places are kept for the run's later loads (a burst's next size, a ramp's next step), so a worker
keeps its index over the whole run.

A reply that names no worker (a stock page: a plain nginx's 'hello', a line server's greeting) is still an answer
of the protocol: served, by a worker this host cannot name. Drivers count it under UNNAMED_KEY, and `place` puts it
on UNNAMED, no row: the load's summary counts it apart (LoadSummary.unnamed), its duration in the histogram. It was
a bad reply, and 'ramp --target' at a plain nginx read 'Knee: no step held' of 200 requests its access log had.

More pids than -w said answer: the workers grow (indices -w, -w+1, ... by pid). -w is the user's word for a
server this host cannot see; a reply is what the server says itself, and a request it answered is never
dropped from the per-worker counts (their sum is what was served).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..core.protocol import ROWS_BY_INDEX, ROWS_BY_PID, parse_reply
from ..core.spec import MAX_WORKERS

INDEX_SHIFT = 32  # a key holds the pid in its low 32 bits and 1 + the named index above (0: none named)
UNNAMED_KEY = 0  # a reply naming no worker: pid 0, which no reply naming one may name (from_reply)
UNNAMED = -1  # where `place` puts UNNAMED_KEY: on no worker's row


def reply_key(index: int | None, pid: int) -> int:
    """The key of a reply naming `pid` (and worker `index`, where it names one): one int, equal in every process."""
    return pid if index is None else (index + 1) << INDEX_SHIFT | pid


def key_parts(key: int) -> tuple[int | None, int]:
    """(the index the reply named or None, the pid) of a reply key."""
    named = key >> INDEX_SHIFT
    return (named - 1 if named else None), key & ((1 << INDEX_SHIFT) - 1)


@dataclass
class ReplyWorkers:
    """The attribution a load's drivers use for a server known by its address: `from_reply` gives a reply key
    (not an index); the parent's `place` turns the keys into worker indices, once, for the whole run."""

    workers: int  # what -w said: the indices a reply naming only its pid is placed on first
    keys: list[int | None] = field(default_factory=list)  # worker index -> its reply key (None: none placed yet)
    holds_socket: bool = False

    def from_reply(self, reply: bytes) -> int | None:
        parsed = parse_reply(reply)
        if parsed is None:  # answered, naming no worker: served, on no row; 'worker ...' that names none is bad
            return UNNAMED_KEY if reply.strip() and not reply.startswith(b"worker") else None
        index, pid = parsed
        if not 0 < pid < 1 << INDEX_SHIFT or (index is not None and index < 0):
            return None
        return reply_key(index, pid)

    def from_socket(self, local: tuple[str, int], peer: tuple[str, int]) -> int | None:
        return None

    @property
    def pids(self) -> list[int]:
        """Worker pids by index as the replies named them (0 for an index no reply has named yet; none at all
        before the first load was placed)."""
        return [0 if key is None else key_parts(key)[1] for key in self.keys]

    @property
    def rows_by(self) -> str | None:
        """How the placed rows are numbered (core.protocol ROWS_BY_*): by the server's own index where every
        key named the index it sits on; by pid where one named none, or sits elsewhere (a worker the server
        restarted, its index held by the pid before it). None before any key was placed."""
        placed = [(row, key_parts(key)[0]) for row, key in enumerate(self.keys) if key is not None]
        if not placed:
            return None
        return ROWS_BY_INDEX if all(row == named for row, named in placed) else ROWS_BY_PID

    def place(self, keys: Iterable[int]) -> dict[int, int]:
        """Each of `keys`' worker index. A key already placed keeps its index; a new one naming an index goes
        there when it is free, and the rest (a bare pid, or a named index another pid holds: a worker the
        server restarted) take the free indices in pid order, below -w first, then new ones past the last."""
        wanted = set(keys)
        unnamed = UNNAMED_KEY in wanted
        wanted.discard(UNNAMED_KEY)
        self._grow(self.workers)
        new = sorted((key_parts(k) for k in wanted - set(self.keys)), key=lambda p: (p[0] is None, p[0] or 0, p[1]))
        unplaced = []
        for index, pid in new:
            key = reply_key(index, pid)
            if index is not None and index < MAX_WORKERS:
                self._grow(index + 1)
                if self.keys[index] is None:
                    self.keys[index] = key
                    continue
            unplaced.append(key)
        for key in sorted(unplaced, key=lambda k: key_parts(k)[1]):
            free = next((i for i, k in enumerate(self.keys) if k is None), None)
            if free is None:
                self.keys.append(key)
            else:
                self.keys[free] = key
        placed = {key: i for i, key in enumerate(self.keys) if key is not None and key in wanted}
        return {**placed, UNNAMED_KEY: UNNAMED} if unnamed else placed

    def _grow(self, size: int) -> None:
        self.keys.extend([None] * (size - len(self.keys)))
