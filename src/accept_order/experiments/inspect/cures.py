"""What changes the split of load when one worker holds most long-lived connections (keep-alive pools,
HTTP/2, WebSockets), per server kind. An accept mode decides only where a connection lands when it is
accepted, and a long-lived one stays there: the cures are also the server's limits on a connection's life
(a connection that ends is opened again and placed again) and balancers that count what each worker holds.

Each kind declares its own (ServerKind.cures, in the kind's module); this module holds the rows of no kind
(Envoy's balancer, a server this tool does not know) and puts a kind's rows together with what /proc saw
and what is installed here. Each setting was checked against the installed server (its config check,
help, source) or its own documentation; what a row says that the documentation does not was run here
(the row says so). A row's `measure` is the accept-order command that measures it on a pool load, or
says why there is none yet (then, after a colon, the nearest command: the client's side of a limit).
`PID` and `PORT` in a command stand for the running server's.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, replace

from ...core.cures import ClientLimit, IdleLimit, LongLivedCure, Measured, SideBySide
from ...core.kinds import ServerKind
from ...core.spec import DEFAULT_KIND

COMMAND = "accept-order "  # where a measure's command starts
NONE_OF_ITS_OWN = "no setting of its own"  # the setting of a kind's one row when it has none
NONE_KNOWN = "no setting known"  # a server this tool does not know, or one attached (of any kind)
# The pool load: -c connections opened one after another at idle, then requests over them (K requests per
# connection, 0: it lives for the whole run), each request 1 ms of CPU.
CONCURRENCY = 32
RESTARTS = 100  # the client's K that stands for a server's limit of 100 requests per connection


@dataclass(frozen=True)
class Cure:
    """One thing that changes the split of load on long-lived connections of one server kind. `setting`:
    the exact configuration line or command-line flag (NONE_OF_ITS_OWN, NONE_KNOWN: a row saying why there
    is none); `what`: what it does to that split; `measure`: the accept-order command that measures it on
    a pool load, or a sentence saying why there is none (and then, after a colon, the nearest one);
    `available`: False when what it needs is not installed here, `reason` saying what."""

    setting: str
    what: str
    measure: str
    available: bool = True
    reason: str = ""

    @property
    def command(self) -> str | None:
        """The accept-order command line in `measure`, or None where it has none."""
        at = self.measure.find(COMMAND)
        return self.measure[at:] if at >= 0 else None


def pool(kind: ServerKind, modes: str, requests: int = 0, extra: str = "") -> str:
    """The command that measures `modes` (a --modes list) of `kind` on the pool load (one request per
    connection for a kind that closes each after its answer: it refuses a pool, closes_connections; and for a
    client that stands for a limit of one request: a pool keeps its connections, so it refuses that too)."""
    server = "" if kind.name == DEFAULT_KIND else f" --server {kind.name}"
    one = kind.closes_connections or requests == 1
    kept, per = ("", "") if one else (" --pool", f" --requests-per-connection {requests}")
    work = "" if kind.no_work else " --work 1ms"  # Caddy refuses it: it would burn none
    return f"accept-order latency{server} --modes {modes}{extra}{kept} -c {CONCURRENCY}{per}{work} --duration 10s"


def measure(kind: ServerKind, how: Measured) -> str:
    """How a kind's cure is measured, in words ending with the command where there is one."""
    if isinstance(how, SideBySide):
        command = pool(kind, ",".join(how.modes), extra=f" {how.extra}" if how.extra else "")
        return f"{how.said}: {command}" if how.said else command
    if isinstance(how, ClientLimit):  # a client that closes stands for the limit the tool does not set
        requests = RESTARTS if how.requests is None else how.requests
        # a time limit has no count to stand for it: the client's count redraws the split, not as often
        how_often = "by a count where the server does by a time" if how.timed else "as the server would"
        # what the launched config does with the setting, as the kind says: nginx's, Apache's, lighttpd's and
        # Node's lift their limits under a kept load, where 'does not pass it' was false
        launched = (
            f"the {kind.name} this tool launches sets {how.launched}, and no option of the tool's sets another"
            if how.launched
            else f"the tool does not pass {how.setting} to the {kind.name} it launches yet"
        )
        return (
            f"{launched}; a client that closes after "
            f"{requests} request{'s' if requests > 1 else ''} redraws the split {how_often} (compare "
            f"--requests-per-connection 0): {pool(kind, kind.default_mode(), requests)}"
        )
    if isinstance(how, IdleLimit):
        return (
            "not measured: no load of this tool leaves a connection idle (each sends its next request as soon "
            f"as it has its answer), so {how.setting} never fires under it"
        )
    return how


# The rows of no kind: said as they are.
ENVOY = Cure(
    "connection_balance_config: {exact_balance: {}}",
    "Envoy's listener balancer: under a lock, each connection goes to the worker thread holding the fewest, "
    "so the counts stay nearly exactly even (Envoy's advice for a few long-lived connections)",
    "the tool does not launch Envoy; one started by hand is measured attached: accept-order latency --attach "
    f"PID --port PORT --protocol http --pool -c {CONCURRENCY} --requests-per-connection 0 --duration 10s",
)
UNKNOWN = Cure(
    NONE_KNOWN,
    "a server this tool does not know: its own limit on requests per connection or on a connection's life "
    "(nginx's keepalive_requests, Apache's MaxKeepAliveRequests, ...) redraws the split each time a "
    "connection ends, and a listener per worker (SO_REUSEPORT) spreads a pool by a hash",
    "the client's side of such a limit, on the running server: accept-order latency --attach PID --port "
    f"PORT --protocol http --pool -c {CONCURRENCY} --requests-per-connection {RESTARTS} --duration 10s",
)


def envoy() -> Cure:
    """Envoy's row, which a server this tool does not start may be behind: available where Envoy is installed."""
    return ENVOY if shutil.which("envoy") else replace(ENVOY, available=False, reason="Envoy is not installed here")


def undeclared(kind: ServerKind) -> LongLivedCure:
    """The row of a launched kind that declares none: nothing but its accept mode places a connection."""
    return LongLivedCure(
        None,
        f"{kind.name} declares no setting that changes it: a long-lived connection stays with the worker "
        "that accepted it, placed by the accept mode",
        SideBySide((kind.default_mode(),)),
    )


def long_lived_cures(kind: ServerKind | None, seen: tuple[str, ...]) -> tuple[Cure, ...]:
    """What changes the split of load on long-lived connections of a server of `kind` (None: one this tool
    does not know), whose modes that /proc cannot tell from what it shows are `seen` (empty: not known).
    A cure that is a mode, seen whole in /proc, is left out when it is all /proc shows: set already. A
    server this tool does not start (attached, remote, unknown) may be balanced by Envoy: its row last."""
    if kind is None or (not kind.launched and not kind.cures):
        return (UNKNOWN, envoy())
    cures = []
    for row in kind.cures or (undeclared(kind),):
        if row.visible and row.mode is not None and seen == (row.mode,):
            continue
        what = row.what
        if row.mode in seen:
            cannot = "them apart" if len(seen) > 1 else "the rest of it"
            what += f" (may be set already: /proc shows {kind.name}'s {' or '.join(seen)}, and cannot tell {cannot})"
        why = kind.unavailable(row.mode) if row.mode is not None and row.mode in kind.modes() else kind.missing()
        setting = NONE_OF_ITS_OWN if row.setting is None else row.setting
        cures.append(Cure(setting, what, measure(kind, row.measure), why is None, why or ""))
    return tuple(cures) if kind.launched else (*cures, envoy())
