"""How a kind's long-lived connections' split changes, as each kind declares it (ServerKind.cures): the records
of those declarations, made where they are read (inspect's report and its tests), not where the kinds are
imported: four dataclasses every command's start-up made (Python 3.11 compiles each one's methods; issue 30)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SideBySide:
    """A cure measured as the kind's `modes` side by side on the pool load, the command taking `extra` too
    (`--policy least-busy`); `said`: a sentence said before the command (a colon between them)."""

    modes: tuple[str, ...]
    extra: str = ""
    said: str = ""


@dataclass(frozen=True)
class ClientLimit:
    """A server's limit on a connection's life (`setting`, by the name it is set by) that no option of the tool's
    sets on the server it launches: a client closing each connection after `requests` requests (None: the usual
    stand-in for a limit) redraws the split as the limit would; `timed`: the limit is a time (nginx's
    keepalive_time), which a count of requests stands for only as often, not as the server would. `launched`:
    what the launched server's own config sets it to, and under which loads (empty: it leaves the server's
    default), said as the kind's config writes it."""

    setting: str
    requests: int | None = None
    timed: bool = False
    launched: str = ""


@dataclass(frozen=True)
class IdleLimit:
    """A server's idle timeout (`setting`, by its name): not measured, as no load leaves a connection idle."""

    setting: str


#: how a cure is measured: a spec experiments/inspect/cures.py turns into the command, or a sentence said as
#: it is ("not measured: ...")
Measured = SideBySide | ClientLimit | IdleLimit | str


@dataclass(frozen=True)
class LongLivedCure:
    """One thing that changes how the load of a kind's long-lived connections (keep-alive pools, HTTP/2,
    WebSockets) splits over its workers, as the kind declares it (ServerKind.cures).
    `setting`: the exact configuration line or command-line flag (None: the kind has no setting of its own,
    and `what` says why); `what`: what it does to that split; `measure`: how it is measured on a pool load;
    `mode`: the kind's mode it is (None: a setting /proc cannot see); `visible`: /proc shows it whole in
    that mode (not fd-pass's policy), so that it is left out when it is all /proc shows: set already."""

    setting: str | None
    what: str
    measure: Measured
    mode: str | None = None
    visible: bool = True
