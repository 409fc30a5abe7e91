"""Why a load at a server this tool did not start (--target, --attach) served nothing: its replies named no
worker, or it waited for a request the line client never sends.

--target knows a worker only by the pid its reply names, so a stock page ('hello, world', nginx's welcome)
fails every connection as a bad reply although the server answered each one; and with --protocol line (the
default) the client sends nothing, so an HTTP server times every connection out. latency says the first when it
ends (cli/latency.py) and run both under its report (order/report.py); a ramp or a burst said only 'N failed (bad
reply N)' or '(timeout N)' and exited 0, as if the server had failed them. An HTTP server may also close
such a connection before the client gives up (gunicorn's gthread worker after its keepalive, 2 s): 'no reply',
and 'latency --attach' said only 'served nothing: 4 × no reply' of it. An HTTPS port (nginx, h2o, HAProxy or Caddy
serving HTTP/2 over TLS) cannot answer the plain HTTP/1.1 the load speaks: nginx and Caddy answer 400, which was
put down to '/' not answering 200, h2o and HAProxy close ('no reply'); `tls_spoken` asks the port itself."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from rich.text import Text

from ..core.protocol import BAD_REPLY, NO_REPLY, TIMEOUT
from ..core.spec import ServerSpec
from ..servers.registry import KINDS, known_by_replies

if TYPE_CHECKING:
    from ..core.kinds import ServerKind
    from ..probes.tls_hello import H2cSpoken, TlsSpoken

NOTE = (
    "The server answered, but no reply named a worker: --target attributes each connection by its reply alone, "
    "which must read 'worker PID' or 'worker N pid PID' (as accept-order serve answers)"
)
# run's one client attributes each connection as it ends (loads/sequential_books.py), and its sequence, per-worker
# table and verdict are all of workers: a reply naming none leaves it nothing to show. What it served, how fast and
# how long each took is latency's, one connection at a time; who took each, where the server runs here, --attach's
# (the holder of each socket, or the kernel's accepts for a server that closes at once).
RUN_UNNAMED = (
    "the server answered all {n} connections, but no reply named a worker: run shows which worker served each, and "
    "--target knows a worker by its reply alone ('worker PID' or 'worker N pid PID', as accept-order serve answers). "
    "What it served, at what rate and how long each took, one connection at a time, per worker not known: "
    "'accept-order latency --target {address} --protocol {protocol} -c 1 -n {n}'; which worker took each, where the "
    "server runs in this machine's network namespace: 'accept-order run --attach PID --host {host} --port {port} "
    "--protocol {protocol}' (PID: its master's)"
)
UNEXPECTED = "unexpected reply"  # run's failure of a reply naming no worker (loads/sequential_books.py)


def run_unnamed(server: ServerSpec, failures: Mapping[str, int]) -> str | None:
    """run --target whose every connection failed as a reply naming no worker (`failures`: each error's start ->
    connections): what says what it served and who took each; None otherwise."""
    if not known_by_replies(server) or not failures or not all(name.startswith(UNEXPECTED) for name in failures):
        return None
    host = f"[{server.host}]" if ":" in server.host else server.host
    return RUN_UNNAMED.format(
        address=f"{host}:{server.port}",
        host=server.host,
        port=server.port,
        protocol=server.protocol,
        n=sum(failures.values()),
    )


# run's verdict where no reply named a worker and some were answers: the server served those, so not 'nothing served'
# (analysis/order.py's word for an empty sequence)
UNNAMED_PATTERN = "not known: no reply named a worker"


def answered_unnamed(server: ServerSpec, error: str | None) -> bool:
    """A run record's failure that is a --target's answer naming no worker: the server served it."""
    return error is not None and error.startswith(UNEXPECTED) and known_by_replies(server)


RUN_PARTLY = (
    "The {n} answered naming no worker (a page of the server's own; behind a proxy, another server's) were served, "
    "but run knows a connection by the worker its reply names, so they are on no row and out of the verdict, which "
    "are of the {served} that named one; 'accept-order latency --target {address} --protocol {protocol}' counts "
    "them served"
)


def run_partly_unnamed(server: ServerSpec, served: int, failures: Mapping[str, int]) -> str | None:
    """run --target where some replies named a worker (`served`) and others none (recorded as an unexpected reply;
    `failures`: each record's error -> connections): that the server served those, out of the table and verdict (a
    proxy in front of accept-order serve and a plain nginx read '5 of 10 connections failed' the nginx had served).
    None where none named a worker (run_unnamed says more) or none was such an answer."""
    unnamed = sum(n for name, n in failures.items() if answered_unnamed(server, name))
    if not served or not unnamed:
        return None
    host = f"[{server.host}]" if ":" in server.host else server.host
    return RUN_PARTLY.format(n=unnamed, served=served, address=f"{host}:{server.port}", protocol=server.protocol)


SILENT = (
    "No connection got an answer: with --protocol line (the default) the client sends nothing and waits for the "
    "server to write first; a server that waits for a request (HTTP: nginx, HAProxy, gunicorn, ...) needs "
    "--protocol http"
)


def line_client_unanswered(server: ServerSpec, failures: Iterable[str]) -> bool:
    """A server this tool did not start, driven with --protocol line, failed every connection it was sent by
    keeping silent until the client gave up or by closing without a word: what an HTTP server does with a
    client that sends no request."""
    kind = KINDS.get(server.kind)
    failed = set(failures)
    started_here = kind is not None and kind.launched
    return not started_here and server.protocol == "line" and bool(failed) and failed <= {TIMEOUT, NO_REPLY}


# How plain HTTP/1.1 fails at a TLS port or one speaking HTTP/2 in the clear. 'not an HTTP answer' is an h2c port's
# SETTINGS and GOAWAY read to the close by the one-request client: 'latency --attach' without --pool at nginx's
# 'listen ... http2' said only 'served nothing: 9754 × bad reply (not an HTTP answer)', and run 'nothing served'.
FAILED_AS_TLS_OR_H2C = frozenset(
    {NO_REPLY, "ECONNRESET", "EPIPE", f"{BAD_REPLY} (HTTP 400)", f"{BAD_REPLY} (not an HTTP answer)"}
)


def tls_spoken(server: ServerSpec, failures: Iterable[str]) -> TlsSpoken | H2cSpoken | None:
    """What a server this tool did not start, driven with --protocol http, speaks where it failed every
    connection as a TLS server fails plain HTTP (a 400, a close, a reset) and its port completes a TLS
    handshake; None otherwise (asked only then: a handshake may take up to HANDSHAKE_S). The handshake is a
    connection the server sees: a plain nginx logs its ClientHello as a 400, so a server whose '/' answers
    404 or 403, which no TLS port answers plain HTTP with (nginx, Caddy, Apache: 400), is not asked. A port that
    completes no handshake is asked for HTTP/2 in the clear (h2c) next, a second connection (a plain nginx logs
    'PRI * HTTP/2.0' as a 400): nginx's 'listen ... http2' without ssl, at which h2load is pointed, failed every
    request 'no reply' and latency said no more."""
    kind = KINDS.get(server.kind)
    failed = set(failures)
    as_tls = bool(failed) and failed <= FAILED_AS_TLS_OR_H2C
    if (kind is not None and kind.launched) or server.protocol != "http" or not as_tls:
        return None
    from ..probes.tls_hello import speaks_h2c, speaks_tls  # ssl: only where a run served nothing

    spoken = speaks_tls(server.host, server.port)
    return spoken if spoken is not None else speaks_h2c(server.host, server.port)


def tls_note(server: ServerSpec, spoken: TlsSpoken | H2cSpoken) -> str:
    """The sentence for a TLS port: what it speaks, and the plain listener the load needs (named by --target for
    a server elsewhere: --port with --target is a usage error), in the words of the server found there."""
    aim = "--target that address" if known_by_replies(server) else "--port that one"
    return (
        f"{_at(server)} speaks {spoken.said}, and the load speaks plain HTTP/1.1 only: give the "
        f"server a plain-HTTP listener beside it ({_plain_listener(_found(server), spoken)}) and {aim} (the "
        f"same accept mechanism; {spoken.unmeasured} are not measured)"
    )


def _found(server: ServerSpec) -> ServerKind | None:
    """The kind /proc names an attached server (registry.recognise, as inspect reads it); None for a server elsewhere,
    which only its replies are known by, or a process of no known kind."""
    if not server.attach:
        return None
    from ..probes.proc_processes import process_info
    from ..servers.registry import recognise

    info = process_info(server.attach[0])
    return recognise(info.name, info.argv) if info is not None else None


def _plain_listener(kind: ServerKind | None, spoken: TlsSpoken | H2cSpoken) -> str:
    """How the server found adds a plain HTTP/1.1 listener beside its TLS or h2c one, in its own words (its kind's
    plain_listener): an h2c HAProxy was told 'nginx: listen ...', the only words there were. A server of no known
    kind, or elsewhere, gets no one's syntax."""
    said = kind.plain_listener(spoken.listen == "http2", spoken.listen) if kind is not None else None
    if said is not None:
        return said
    named = f"{kind.name}: " if kind is not None else ""
    return f"{named}a second listener on a port of its own, plain HTTP/1.1, served by the same workers"


def _at(server: ServerSpec) -> str:
    """host:port as --target takes it: '[::1]:8443' for an IPv6 address ('::1:8443' reads as one address)."""
    return f"[{server.host}]:{server.port}" if ":" in server.host else f"{server.host}:{server.port}"


def unserved_tls(server: ServerSpec, loads: Iterable[tuple[int, Mapping[str, int]]]) -> str | None:
    """tls_note for a server elsewhere whose loads (each: what it served, its failures by name) served nothing
    and failed as a TLS port fails plain HTTP, where its port speaks TLS; None otherwise. For a command's own
    line after its report (burst, ramp): a report read again by 'show' must not ask the port."""
    loads = list(loads)
    if not loads or any(served for served, _ in loads):
        return None
    spoken = tls_spoken(server, (name for _, errors in loads for name, n in errors.items() if n))
    return tls_note(server, spoken) if spoken is not None else None


def target_unanswered_note(server: ServerSpec, loads: Iterable[tuple[int, Mapping[str, int]]]) -> Text | None:
    """The note for a server elsewhere whose loads (each: what it served, its failures by errno) served
    nothing and failed only as bad replies, or only by timing out under --protocol line; None otherwise (a
    refusal or a reset is something else)."""
    loads = list(loads)
    if not known_by_replies(server) or not loads:
        return None
    if any(served for served, _ in loads):
        return None
    failures = {name for _, errors in loads for name, n in errors.items() if n}
    # a status or an empty 200 names no worker either (burst at nginx's 'return 301' said only its name); a 400
    # alone is a TLS port's answer to plain HTTP, which unserved_tls asks the port about
    answered = all(name.startswith(BAD_REPLY) for name in failures) and f"{BAD_REPLY} (HTTP 400)" not in failures
    if failures and answered:
        return Text(NOTE, style="yellow")
    if line_client_unanswered(server, failures):
        return Text(SILENT, style="yellow")
    return None


def unnamed_note(server: ServerSpec, loads: Iterable[tuple[int, int]]) -> Text | None:
    """Where a server elsewhere answered with replies that name no worker (`loads`: each one's served on no row and
    served in all; loads/reply_keys.py): they count as served, and how its workers shared them is not known. None
    where every reply named one, or for a server this tool sees."""
    if not known_by_replies(server):
        return None
    pairs = list(loads)
    unnamed, served = sum(u for u, _ in pairs), sum(s for _, s in pairs)
    if unnamed <= 0:
        return None
    which = "No reply named a worker" if unnamed >= served else f"{unnamed:,} of the {served:,} replies named no worker"
    return Text(
        f"{which} (a page of the server's own, not 'worker PID' as accept-order serve answers): each counts as "
        "served, in the latencies and totals, and how the server's workers shared them is not known here (no "
        "worker's row holds them; --observe-on HOST counts each worker's accepts on its host)",
        style="yellow",
    )
