"""'latency --attach PID --port P' at an HTTP server (the line client, the default, sends no request) ended in
'served nothing: 4 × no reply' (gunicorn's gthread worker closes the silent connection after its 2 s
keepalive) or '2 × timeout' (its sync worker waits) and nothing more, where 'run --attach' says the server
waits for a request and that --protocol http sends one. latency's error line says so now, for an attached or
a --target server driven with the line client, and for nothing else."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from accept_order.cli.hosts_lost import end_if_unmeasured
from accept_order.cli.served_nothing import of_totals
from accept_order.core.errors import NothingServed
from accept_order.core.spec import ServerSpec

HINT = "needs --protocol http"


def _said(errors: dict[str, int], **spec: object) -> str:
    server = ServerSpec(**spec)  # type: ignore[arg-type]
    with pytest.raises(NothingServed) as raised:
        run = SimpleNamespace(ok=False, errors=errors, server=server)
        end_if_unmeasured([of_totals(run)], run, None)  # latency's end
    return str(raised.value)


@pytest.mark.parametrize("errors", [{"no reply": 4}, {"timeout": 2}, {"timeout": 1, "no reply": 3, "EPIPE": 0}])
def test_an_attached_server_silent_to_the_line_client_is_told_of_protocol_http(errors: dict[str, int]) -> None:
    said = _said(errors, kind="attached", attach=(4242,), protocol="line")
    assert said.startswith("served nothing: ") and HINT in said


def test_the_hint_is_not_said_where_it_cannot_help() -> None:
    assert HINT not in _said({"no reply": 4}, kind="attached", attach=(4242,), protocol="http")
    assert HINT not in _said({"ECONNREFUSED": 4}, kind="attached", attach=(4242,), protocol="line")
    assert HINT not in _said({"timeout": 3, "ECONNRESET": 1}, kind="attached", attach=(4242,), protocol="line")
    assert HINT not in _said({"timeout": 4})  # the tool's own workers: a timeout is theirs, not the protocol's
