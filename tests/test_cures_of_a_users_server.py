"""inspect of a user's h2o printed its cure as '(set to 1 here: closed 1 s after its answer)': 'here' was this tool's
own launch, read beside someone else's server. A kind's cures are shown for servers it did not start (inspect,
observe, --attach), so none of them speaks of 'here' (h2o's, uWSGI's two and Node's did)."""

from __future__ import annotations

import re

from accept_order.servers.registry import KINDS


def test_no_cure_speaks_of_here() -> None:
    said = [(kind.name, cure.what) for kind in KINDS.values() for cure in kind.cures]
    assert len({name for name, _ in said}) > 5  # the kinds' cures, not an empty list
    assert [(name, what) for name, what in said if re.search(r"\bhere\b", what)] == []


def test_h2o_says_what_its_idle_timeout_did_as_a_fact_of_h2o() -> None:
    (request_timeout, _) = KINDS["h2o"].cures
    assert request_timeout.setting == "http1-request-timeout: 10"
    assert "(at 1, h2o 2.2 closed a kept connection 1 s after its answer)" in request_timeout.what
