"""The Python API's runs of an attached server save its listeners' backlogs, as the command line's do.

The command line read them into its spec (cli/specs.attached_spec: dee652f) and the API read none:
`accept_order.latency(ServerSpec(kind="attached", ...))`, `accept_order.run(kind="attached", ...)` and
`api.split_options` of nginx at 'listen ... backlog=511' saved backlogs () where 'latency --attach' saved [511]. They
are now read in one place, as every run is planned (servers/registry.py plan: AttachedKind.as_found), the command
line's and the API's alike."""

from __future__ import annotations

import pytest
from nginx_by_hand import nginx_by_hand
from test_attached_spec_backlog import CONF, START_TIMEOUT_S, send_q

import accept_order
from accept_order import api
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.servers import attached_backlogs
from accept_order.servers.registry import plan

WORKERS = 2


def test_the_apis_runs_of_an_attached_nginx_save_its_own_backlog(free_port: int) -> None:
    with nginx_by_hand(CONF, free_port, WORKERS, START_TIMEOUT_S) as nginx:
        assert send_q(free_port) == [64]  # the witness: the kernel holds what the config asked
        spec = ServerSpec(
            kind="attached", mode="attached", workers=WORKERS, port=free_port, attach=(nginx.master,), protocol="http"
        )
        assert spec.backlogs == ()  # as made: nothing read yet
        latency = accept_order.latency(spec, ConcurrentLoad(connections=10, concurrency=2))
        keywords = dict(mode="attached", kind="attached", attach=(nginx.master,), port=free_port, protocol="http")
        sequential = accept_order.run(workers=WORKERS, connections=4, **keywords)
        # a spec that holds others (an earlier result's server, the listener re-listened since): the kernel's saved
        again = accept_order.latency(spec.replace(backlogs=(5,)), ConcurrentLoad(connections=4, concurrency=2))
        assert nginx.access_log.read_text().count('"GET ') >= 18  # it was this nginx that served them
    assert again.server.backlogs == (64,), again.server
    assert latency.server.backlogs == (64,), latency.server
    assert sequential.server.backlogs == (64,), sequential.server
    assert latency.server.known_backlogs == (64,)


def test_the_command_line_and_the_api_read_them_in_one_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's plan reads them (once, of the pids the spec names), whatever the spec holds: an earlier result's
    server, run again through the API after nginx was reloaded from backlog=64 to 128, saved 64 (ss: 128)."""
    asked: list[tuple[str, int, list[int]]] = []

    def read(host: str, port: int, pids: list[int]) -> tuple[int, ...]:
        asked.append((host, port, list(pids)))
        return (128,)

    monkeypatch.setattr(attached_backlogs, "listener_backlogs", read)
    spec = ServerSpec(kind="attached", mode="attached", workers=1, port=18771, attach=(4242, 4243), protocol="http")
    assert plan(spec).spec.backlogs == (128,)
    assert asked == [("127.0.0.1", 18771, [4242, 4243])]
    assert plan(spec.replace(backlogs=(64,))).spec.backlogs == (128,) and len(asked) == 2  # the kernel's, not given
    server, _ = api.split_options(dict(kind="attached", mode="attached", attach=(4242,), port=1), ConcurrentLoad)
    assert server.backlogs == () and len(asked) == 2  # read as its run is planned, not before
    assert plan(ServerSpec(kind="builtin", mode="epoll", workers=1)).spec.backlogs == ()  # a server it starts
    assert len(asked) == 2
