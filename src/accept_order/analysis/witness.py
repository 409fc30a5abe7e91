"""A load's account of who served what, checked against the server's own log (the witness).

The witness (a launched server's evidence, servers/launched/base.py) is one row per request it logged:
[worker pid, client port], and in a run that kept its connections, where the server numbers each request on
its connection (nginx's `$connection_requests`, Apache's `%k`, a session variable of HAProxy's), that number
as a third (1: the connection's first request). Per worker the log then gives the requests it served and the
connections it served them on: the rows numbered 1, or, where the server numbers none, its client ports: one
connection a port, or, when each connection carried K requests, one for each K rows of a port (loopback gives
a port in TIME_WAIT to a new connection at once, net.ipv4.tcp_tw_reuse 2: one port can carry two in a run).

The client's side is the load's: requests per worker as its replies named them, and connections per worker as
their first replies named them (the worker that accepted them). They agree when every count is the same.

A request the load sent again after the server closed its kept connection before any byte of the reply
(loads/kept.py) is one request on each side: the server answered it once, on the new connection, and logged
nothing for the first attempt (it closed before reading it, or without answering); the connection it closed
had at least one answered request, so both sides count it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.text import plural


@dataclass(frozen=True)
class Logged:
    """What the server's own log says each worker (in index order) served: requests, and the connections they
    came on (None when the rows cannot tell connections apart: a log without client ports)."""

    source: str
    requests: tuple[int, ...]
    connections: tuple[int, ...] | None
    numbered_by: str | None  # the field that numbered each request on its connection; None: by client port
    elsewhere: int  # rows naming a pid that is none of the workers'
    dropped: int = 0  # lines lost on their way to the tool, as the kernel counted them: the log lacks them


def logged(witness: Mapping[str, Any], pids: Sequence[int], per_connection: int = 0) -> Logged | None:
    """Per worker of `pids` (index order): the requests and connections its log rows name; None when
    `witness` is not a witness (an older file's evidence, another kind's). `per_connection`: the requests
    each connection carried (0: all of the run's), for a log that numbers none."""
    rows = witness.get("requests")
    if not isinstance(rows, list):
        return None
    numbered_by = witness.get("numbered_by")
    numbered = isinstance(numbered_by, str)
    index = {pid: i for i, pid in enumerate(pids)}
    requests: Counter[int] = Counter()
    firsts: Counter[int] = Counter()
    ports: Counter[tuple[int, Any]] = Counter()
    elsewhere = 0
    portless = False
    for row in rows:
        if not isinstance(row, list) or not row or row[0] not in index:
            elsewhere += 1
            continue
        worker = index[row[0]]
        requests[worker] += 1
        if numbered:
            firsts[worker] += len(row) > 2 and row[2] == 1
        elif len(row) > 1:
            ports[(worker, row[1])] += 1
        else:
            portless = True
    if numbered:
        connections: tuple[int, ...] | None = tuple(firsts[i] for i in range(len(pids)))
    elif portless:
        connections = None
    else:
        by_port: Counter[int] = Counter()
        for (worker, _), rows_on_port in ports.items():
            by_port[worker] += -(-rows_on_port // per_connection) if per_connection > 0 else 1
        connections = tuple(by_port[i] for i in range(len(pids)))
    return Logged(
        str(witness.get("source", "the server's log")),
        tuple(requests[i] for i in range(len(pids))),
        connections,
        numbered_by if numbered else None,
        elsewhere,
        dropped if isinstance(dropped := witness.get("dropped", 0), int) else 0,
    )


@dataclass(frozen=True)
class Agreement:
    """The load's counts beside the log's, per worker: requests, and connections where the load kept them
    (`connections` empty: one request per connection, where they are the requests)."""

    logged: Logged
    served: tuple[int, ...]
    connections: tuple[int, ...]
    failed: int = (
        0  # requests the load had no answer to (timed out, reset, under way at a stop): the server may have logged them
    )
    resent: int = 0  # requests sent again after the server closed their kept connection (once each in a log)

    @property
    def requests_agree(self) -> bool:
        return self.logged.requests == self.served and not self.logged.elsewhere

    @property
    def connections_agree(self) -> bool | None:
        """None when there is nothing to compare: one request per connection, or a log that cannot tell."""
        if not self.connections or self.logged.connections is None:
            return None
        return self.logged.connections == self.connections

    @property
    def agrees(self) -> bool:
        return self.requests_agree and self.connections_agree is not False

    def line(self) -> str:
        """One sentence: what agreed, or where the log and the load differ."""
        source = self.logged.source
        how = (
            f"connections by its {self.logged.numbered_by}" if self.logged.numbered_by else "connections by client port"
        )
        if self.agrees:
            parts = [f"the same requests per worker ({_counts(self.served)})"]
            if self.connections_agree:
                parts.append(f"the same connections per worker ({_counts(self.connections)}; {how})")
            again = (
                f" (the {self.resent} sent again after the server closed their connection: once each)"
                if self.resent
                else ""
            )
            return f"{source}: " + " and ".join(parts) + " as the replies" + again
        differences = []
        if not self.requests_agree:
            differences.append(
                f"requests per worker {_counts(self.logged.requests)}, the replies {_counts(self.served)}"
            )
            if self.logged.elsewhere:
                differences.append(f"{self.logged.elsewhere} logged by no worker of this run")
        if self.connections_agree is False and self.logged.connections is not None:
            differences.append(
                f"connections per worker {_counts(self.logged.connections)} ({how}), "
                f"the first replies {_counts(self.connections)}"
            )
        more = sum(self.logged.requests) - sum(self.served)
        if 0 < more <= self.failed and all(a >= b for a, b in zip(self.logged.requests, self.served, strict=True)):
            # a request the client gave up on (its timeout), or one under way when a stop (Ctrl-C) ended the load, can
            # still be answered, and logged: the stop's are no failure (the report counts them apart, 'errors 0'), and
            # 'counted as failed' read so beside them
            differences.append(
                f"its {more} more are within the {plural(self.failed, 'request')} the load had no answer to"
            )
        elif 0 < more <= self.resent:
            # a server that logged a request and then closed the connection without answering it
            differences.append(f"its {more} more are within the {self.resent} the load sent again")
        if self.logged.dropped:
            differences.append(
                f"{self.logged.dropped} of its lines were lost on their way to the tool (the kernel's count)"
            )
        return f"{source} disagrees: " + "; ".join(differences)


def agreement(
    witness: Mapping[str, Any],
    pids: Sequence[int],
    served: Sequence[int],
    connections: Sequence[int] = (),
    failed: int = 0,
    resent: int = 0,
    per_connection: int = 0,
) -> Agreement | None:
    """The load's requests (and kept connections, of `per_connection` requests each: 0, the whole run's) per
    worker against the log's; None without a witness."""
    found = logged(witness, pids, per_connection)
    if found is None:
        return None
    return Agreement(found, tuple(served), tuple(connections), failed, resent)


def _counts(values: Sequence[int]) -> str:
    return " ".join(map(str, values))
