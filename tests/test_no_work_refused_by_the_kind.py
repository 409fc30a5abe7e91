"""A kind that declares it cannot burn --work (ServerKind.no_work) is refused it by that declaration alone.

16cbe35 documented no_work as 'Refused where given, and left out of the commands the tool suggests for it', but
the refusal was Caddy's own check: a kind that set no_work was left out of inspect's suggestions and still ran
--work, headed 'work 1 ms busy loop' for a loop it never had (7442179's Caddy, beside nginx, read ten times as
fast). Here nginx's kind with a no_work of its own, and no check of its own, refuses either option."""

from __future__ import annotations

import pytest

from accept_order.core.errors import PlanError
from accept_order.core.spec import ServerSpec
from accept_order.servers.registry import KINDS


class NoWorkNginx(type(KINDS["nginx"])):  # type: ignore[misc]
    no_work = "its handler answers at once"


@pytest.mark.parametrize("work", [{"work_us": 1000}, {"work_iters": 10}])
def test_a_kind_without_work_refuses_it(work: dict[str, int]) -> None:
    with pytest.raises(PlanError, match="^--work and --work-iters do not apply to nginx: its handler answers at once"):
        NoWorkNginx().check(ServerSpec(kind="nginx", mode="epoll", accept_batch=1, **work))
    KINDS["nginx"].check(ServerSpec(kind="nginx", mode="epoll", accept_batch=1, **work))  # nginx itself burns it
