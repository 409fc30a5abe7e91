"""A load that served nothing at all ends its command the same way everywhere: after the report and the file, one
line naming each run that served no connection (or request) and why its connections failed, exit 1 (NothingServed).

latency did so alone: 'run --attach' of a port that answered nothing printed 'Verdict: nothing served' and exited
0, as did sweep, burst, ramp, herd, compare, reload and every --repeat of a launched server whose connections all
timed out ('latency --work 1s --timeout 100ms -n 2 --repeat 2' exited 0; without --repeat, 1). A script reading
exit 0 as 'measured' took the empty table for a result. What served nothing is each command's own run: a mode, a
server, a cap, a burst's or a ramp's every step (one step that served nothing is a knee, not a failure), and each
run of a --repeat's rounds."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from ..core.spec import ServerSpec


class Tally(NamedTuple):
    """One run as this check reads it: what to call it, its server, how many it served, its failures by name. A
    NamedTuple, not a dataclass: only read, and every command imports it (a dataclass's methods are compiled at
    import, tests/test_startup_records.py)."""

    label: str
    server: ServerSpec
    served: int
    errors: Mapping[str, int]


def of_totals(result: Any, label: str | None = None) -> Tally:
    """A load's result (LoadTotals: latency's, a sweep's cap, reload's run): served is its `ok`."""
    return Tally(result.server.label if label is None else label, result.server, result.ok, result.errors)


def of_parts(server: ServerSpec, parts: Iterable[Any], label: str | None = None) -> Tally:
    """A run made of loads (a burst's cells, a ramp's steps): what they served and failed together."""
    served, errors = 0, Counter[str]()
    for part in parts:
        served += part.ok
        errors.update(part.errors)
    return Tally(server.label if label is None else label, server, served, dict(errors))


def of_sequential(result: Any, label: str | None = None) -> Tally:
    """A sequential run (run, herd, compare): its records' errors by name, as a load's are counted ('closed without
    a reply' is a load's 'no reply'; 'timeout: no answer within 5 s' its 'timeout')."""
    from ..core.protocol import NO_REPLY

    errors = Counter(
        NO_REPLY if r.error == "closed without a reply" else (r.error or "").split(":")[0]
        for r in result.records
        if not r.served
    )
    return Tally(result.server.label if label is None else label, result.server, result.served, dict(errors))


def end_if_nothing_served(tallies: Sequence[Tally], hosts_lost: str | None = None) -> None:
    """NothingServed (exit 1) naming each run of `tallies` that served nothing, with why its connections failed
    and, for a server this tool did not start, what would have them answered (--protocol http, a reply naming the
    worker, a plain-HTTP listener beside a TLS or h2c one). Called after the report and the file, which hold it all.
    `hosts_lost`: the lost client hosts' line (cli/hosts_lost.hosts_lost_said), said after, as this ends the command
    before the lost hosts' own line could ('served nothing: 2 × timeout' of 4 connections said no word of the host
    lost). A command that drives loads ends through cli/hosts_lost.end_if_unmeasured, which gives both."""
    from ..core.errors import NothingServed

    empty = [t for t in tallies if not t.served]
    if not empty:
        return
    said: list[str] = []
    for t in empty:
        who = f"{t.label} " if len(tallies) > 1 else ""
        said += why_unserved(t, who)
    raise NothingServed("; ".join([*said, hosts_lost] if hosts_lost else said))


def why_unserved(t: Tally, who: str = "") -> list[str]:
    """The clauses for one run that served nothing: its failures, then what would have them answered."""
    from ..core.protocol import BAD_REPLY, EMPTY_200, describe_error
    from ..experiments.target_unanswered import (
        SILENT,
        answered_unnamed,
        line_client_unanswered,
        run_unnamed,
        tls_note,
        tls_spoken,
    )
    from ..servers.registry import known_by_replies

    if (told := run_unnamed(t.server, t.errors)) is not None:  # run --target at a stock page: answered, not served
        return [f"{who}{told}"]  # not 'served nothing': its access log had every one
    failed = {name for name, n in t.errors.items() if n}
    reasons = ", ".join(f"{n} × {describe_error(name)}" for name, n in sorted(t.errors.items(), key=lambda kv: -kv[1]))
    # run --target: a reply naming no worker was an answer (the server served it), so not 'served nothing'
    answered = any(answered_unnamed(t.server, name) for name in failed)
    said = [
        f"{who}{'no reply named a worker' if answered else 'served nothing'}: " + (reasons or "no request was sent")
    ]
    if known_by_replies(t.server) and failed == {BAD_REPLY}:  # a stock server's page
        said.append(
            "the server answered, but no reply named a worker: --target attributes each connection by its "
            "reply alone, which must read 'worker PID' or 'worker N pid PID' (as accept-order serve answers)"
        )
    if spoken := tls_spoken(t.server, failed):  # an HTTPS port, or HTTP/2 in the clear
        return [*said, tls_note(t.server, spoken)]
    statuses = bool(failed) and all(name.startswith(f"{BAD_REPLY} (HTTP ") for name in failed)
    blank = failed == {EMPTY_200}  # nginx's 'return 200;', read 'names no worker'
    how = "with a status other than 200" if statuses else "with a 200 and an empty body"
    if (statuses or blank) and known_by_replies(t.server):  # nginx's 301 at --target said no more than its name
        said.append(
            f"the server answered 'GET /' {how}: --target counts a connection as served on a 200 whose body "
            "reads 'worker PID' or 'worker N pid PID' (as accept-order serve answers)"
        )
    elif statuses or blank:  # an attached Apache's 404 of '/'
        said.append(
            f"the server answered 'GET /' {how}: a connection counts as served on a 200 only, with a body, so "
            "--port must be where '/' answers 200 with a body (nginx: location = / { return 200 \"ok\\n\"; })"
        )
    if line_client_unanswered(t.server, failed):  # HTTP: awaits a request
        said.append(SILENT[0].lower() + SILENT[1:])
    return said
