"""run --attach on an nginx, as an operator first types it: without --protocol http. nginx waits for a
request, the line client sends none, and every connection timed out; the report said '5 x timeout: no
answer within 5 s' and 'Verdict: nothing served; fairness: Jain 1.000, max/min share inf' (a perfectly
fair nothing), with no word of --protocol. Now it says what a server that waits for a request needs, and a
run that served nothing has no fairness figures."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from accept_order.analysis.order import verdict
from accept_order.experiments.order.report import run_report
from accept_order.experiments.order.result import RunResult

GOLDEN = Path(__file__).parent / "data" / "golden" / "run.json"
HINT = "--protocol http"


def attached(protocol: str, error: str | None, target: bool = False) -> RunResult:
    """The golden run as an attached server's (or a --target's) whose every connection failed with `error`."""
    base = RunResult.from_dict(json.loads(GOLDEN.read_text()))
    kind = "remote" if target else "attached"
    server = replace(base.server, mode=kind, kind=kind, attach=() if target else (4242,), protocol=protocol)
    records = tuple(replace(r, worker=None, pid=None, error=error) for r in base.records)
    return replace(base, server=server, records=records, verdict=verdict(records, server.workers, None, "why"))


def printed(result: RunResult) -> str:
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(run_report(result))
    return console.export_text()


def test_every_connection_timed_out_on_a_line_client_names_the_protocol() -> None:
    text = printed(attached("line", "timeout: no answer within 5 s"))
    assert HINT in text, text
    assert "6 × timeout: no answer within 5 s" in text
    assert HINT in printed(attached("line", "timeout: no answer within 5 s", target=True))  # --target alike


def test_nothing_served_has_no_fairness() -> None:
    text = printed(attached("line", "timeout: no answer within 5 s"))
    verdict_line = next(line for line in text.splitlines() if line.startswith("Verdict:"))
    assert "nothing served" in verdict_line
    assert "Jain" not in verdict_line and "max/min" not in verdict_line, verdict_line


def test_the_hint_is_not_given_where_it_cannot_help() -> None:
    # already http, or refused (the server is not there): --protocol is not the cause
    assert HINT not in printed(attached("http", "timeout: no answer within 5 s"))
    assert HINT not in printed(attached("line", "ECONNREFUSED: Connection refused"))
    # a run that served: the golden one, untouched
    base = RunResult.from_dict(json.loads(GOLDEN.read_text()))
    assert HINT not in printed(base)
    assert "Jain 1.000" in printed(base)


def test_a_target_whose_replies_name_no_worker_is_told_what_a_reply_must_say() -> None:
    """run --target at a stock nginx with --protocol http: every reply was 'hello, world', each connection
    'unexpected reply', 'Verdict: nothing served', and no word of what --target reads from a reply."""
    result = attached("http", "unexpected reply b'hello, world\\n'", target=True)
    text = printed(result)
    assert "no reply named a worker" in text and "worker PID" in text, text
    assert "no reply named a worker" not in printed(attached("http", "timeout: no answer within 5 s", target=True))


def test_an_attached_server_whose_replies_name_no_worker_is_not_told_about_target() -> None:
    """The reply hint is --target's (which knows a worker by its reply alone); --attach knows its workers' pids."""
    text = printed(attached("http", "unexpected reply b'hello, world\\n'", target=False))
    assert "no reply named a worker" not in text and "--target" not in text, text
