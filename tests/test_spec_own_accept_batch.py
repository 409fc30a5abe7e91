"""A ServerSpec made in Python runs each server with its own cap on accepts per wakeup, as the command line does.

`accept_order.latency(ServerSpec(kind="nginx"), load)` ran nginx with multi_accept on and `ServerSpec(kind="haproxy")`
HAProxy with 'tune.maxaccept -1' (no limit): the field's default, 0 (until EAGAIN), where `--server nginx` runs
multi_accept off (nginx's own default) and `--server haproxy` tune.maxaccept 4 (HAProxy's own). A result made through
the API and one made by the command line then differed in the one setting the tool measures, under the same words."""

from __future__ import annotations

import pytest

from accept_order.core.spec import SequentialLoad, ServerSpec
from accept_order.experiments.order.api import split_options
from accept_order.servers.launched.haproxy import HAPROXY_MODES, render_config
from accept_order.servers.registry import KINDS, checked


@pytest.mark.parametrize("name", list(KINDS))
def test_a_spec_of_a_kind_takes_its_own_cap(name: str) -> None:
    assert ServerSpec(kind=name).accept_batch == KINDS[name].default_accept_batch


def test_nginx_and_haproxy_as_they_come() -> None:
    assert ServerSpec(kind="nginx").accept_batch == 1  # multi_accept off
    spec = checked(ServerSpec(kind="haproxy", mode="threads", workers=2))
    assert "tune.maxaccept 4\n" in render_config(spec, HAPROXY_MODES["threads"], 80, "/x")
    server, _ = split_options({"server": "nginx", "connections": 6}, SequentialLoad)  # accept_order.run's keywords
    assert server.accept_batch == 1


def test_a_cap_given_is_kept() -> None:
    assert ServerSpec(kind="nginx", accept_batch=0).accept_batch == 0  # multi_accept on, asked for
    assert ServerSpec(kind="haproxy", accept_batch=16).accept_batch == 16
    assert ServerSpec().accept_batch == 0  # the built-in workers: until EAGAIN, as before
    kept = ServerSpec(kind="nginx", accept_batch=0)
    assert ServerSpec.from_dict(kept.to_dict()).accept_batch == 0  # a file says what ran
