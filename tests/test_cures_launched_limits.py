"""inspect's cure rows said 'the tool does not pass keepalive_requests to the nginx it launches yet', false for
nginx, Apache, lighttpd and Node: the configs this tool writes for them set those limits themselves (lifted past
any run under a kept load; Apache's KeepAlive Off under one request per connection). Each such row now says what
the launched config sets; the witness is the config each kind writes, rendered here for the load the row names.
A kind whose config leaves the limit at the server's own (Puma's max_fast_inline) still says it is not passed."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from accept_order.core.spec import ServerSpec
from accept_order.experiments.inspect.cures import long_lived_cures
from accept_order.servers.launched import apache_config, lighttpd, node
from accept_order.servers.launched.nginx_config import NGINX_MODES
from accept_order.servers.launched.nginx_config import render_config as nginx_config
from accept_order.servers.registry import server_kind


def _nginx(keepalive: bool) -> str:
    return nginx_config(
        "/nonexistent", NGINX_MODES["epoll"], host="127.0.0.1", port=8080, workers=2, backlog=511,
        multi_accept=False, cpus=(), work_us=0, work_iters=0, keepalive=keepalive,
    )  # fmt: skip


def _apache(keepalive: bool) -> str:
    spec = ServerSpec(kind="apache", mode="event", keepalive=keepalive)
    return apache_config.render_config(spec, apache_config.APACHE_MODES["event"], 8080, 8081, "/nonexistent")


def _lighttpd(keepalive: bool) -> str:
    spec = ServerSpec(kind="lighttpd", mode="max-worker", keepalive=keepalive)
    return lighttpd.render_config(spec, lighttpd.LIGHTTPD_MODES["max-worker"], 8080, "/nonexistent")


def _node(keepalive: bool) -> str:
    assert keepalive  # its script sets the limit where cfg.keepalive is true
    line = next(line for line in node.SCRIPT.splitlines() if "maxRequestsPerSocket" in line)
    return line if line.strip().startswith("if (cfg.keepalive)") else ""


# kind, the row's setting, what the row says the launched config sets, the config and whether the load keeps
CASES = [
    ("nginx", "keepalive_requests 100;", "keepalive_requests 1000000000", _nginx, True),
    ("nginx", "keepalive_time 1m;", "keepalive_time 24h", _nginx, True),
    ("apache", "MaxKeepAliveRequests 100", "MaxKeepAliveRequests 0", _apache, True),
    ("apache", "KeepAlive Off", "KeepAlive Off", _apache, False),
    ("lighttpd", "server.max-keep-alive-requests = 100", "server.max-keep-alive-requests = 65535", _lighttpd, True),
    ("node", "server.maxRequestsPerSocket = 100", "server.maxRequestsPerSocket = 0", _node, True),
]


@pytest.mark.parametrize(("kind", "setting", "said", "config", "kept"), CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_a_limit_the_launched_config_sets_is_said_as_set(
    kind: str, setting: str, said: str, config: Callable[[bool], str], kept: bool
) -> None:
    rows = {cure.setting: cure for cure in long_lived_cures(server_kind(kind), ())}
    measure = rows[setting].measure
    assert "does not pass" not in measure, measure
    assert f"the {kind} this tool launches sets {said}" in measure, measure
    written = config(kept)
    assert said in written, written  # the witness: the config the tool writes for that load


def test_a_limit_left_at_the_servers_own_is_still_said_not_passed() -> None:
    rows = {cure.setting: cure for cure in long_lived_cures(server_kind("puma"), ())}
    assert "the tool does not pass max_fast_inline to the puma it launches" in rows["max_fast_inline 10"].measure
