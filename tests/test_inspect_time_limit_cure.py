"""inspect's cures for a hand-started nginx holding keep-alive connections: the keepalive_time row (a limit on
a connection's time) said 'a client that closes after 100 requests redraws the split as the server would',
the sentence of the request limits above it. A count of requests stands for a time only as often: it says so."""

from __future__ import annotations

from accept_order.experiments.inspect.cures import long_lived_cures
from accept_order.servers.registry import server_kind


def test_a_time_limit_is_not_said_to_be_redrawn_as_the_server_would() -> None:
    rows = {cure.setting: cure for cure in long_lived_cures(server_kind("nginx"), ("epoll",))}
    timed = rows["keepalive_time 1m;"].measure
    assert "redraws the split by a count where the server does by a time" in timed, timed
    assert "as the server would" not in timed, timed
    assert "redraws the split as the server would" in rows["keepalive_requests 100;"].measure
