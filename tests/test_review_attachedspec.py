"""The review of 526ab09/dee652f (an attached server's spec holds no backlog of the tool's): what it left.

ServerSpec.backlog became `int | None` so that a server this tool did not start holds none, but the check let None
through for a server the tool starts: 'accept_order.run(backlog=None)' read "epoll is a server this tool did not
start", untrue, and lighttpd was launched with 'server.listen-backlog = None' and exited on its config (status 255,
'parser failed somehow near here')."""

from __future__ import annotations

import pytest

from accept_order.api import run
from accept_order.core.errors import PlanError
from accept_order.core.spec import ServerSpec
from accept_order.servers.registry import checked


def test_a_server_this_tool_starts_needs_a_backlog() -> None:
    with pytest.raises(PlanError, match="--backlog must be a number, got None"):
        checked(ServerSpec(kind="lighttpd", mode="max-worker", workers=1, backlog=None))


def test_the_api_says_the_backlog_is_missing_not_that_the_server_was_not_started() -> None:
    with pytest.raises(PlanError) as caught:
        run(mode="epoll", workers=2, connections=3, backlog=None)
    assert "--backlog" in str(caught.value) and "did not start" not in str(caught.value), caught.value


@pytest.mark.parametrize("kind", ["attached", "remote"])
def test_a_server_it_did_not_start_still_has_none(kind: str) -> None:
    spec = ServerSpec(kind=kind, mode=kind, attach=(1,), port=80, backlog=None).validated()
    assert spec.backlog is None
