"""A test that moves its pytest worker into another network namespace (`reload` run in process does: it unshares
for good) leaves the next test in the worker's own (tests/host_namespace.py). The two tests run in this order in one
worker (an xdist group); without the fixture the second finds itself in the first's namespace, and its children
inherit the first's declaration that the namespace is the run's own (probes/evidence.PRIVATE_ENV)."""

from __future__ import annotations

import os

import pytest
from host_namespace import namespace_inode

from accept_order.core import netns
from accept_order.probes.evidence import PRIVATE_ENV, netns_privacy

pytestmark = pytest.mark.xdist_group("host_namespace_kept")
STARTED_IN = namespace_inode()
DECLARED = os.environ.get(PRIVATE_ENV)
moved_to: list[int] = []


@pytest.mark.skipif(os.geteuid() != 0, reason="unshare(CLONE_NEWNET) needs CAP_SYS_ADMIN")
def test_a_test_that_moves_its_worker_into_a_namespace() -> None:
    netns.enter_private()  # what cli/reload.py does in its own process
    os.environ[PRIVATE_ENV] = "1"
    moved_to.append(namespace_inode())
    assert moved_to[0] != STARTED_IN


def test_the_next_test_is_back_in_the_workers_own() -> None:
    if not moved_to:
        pytest.skip("the first test did not run in this worker before this one")
    assert namespace_inode() == STARTED_IN
    assert os.environ.get(PRIVATE_ENV) == DECLARED
    if DECLARED is None:  # what a run here would say of its namespace: as before the first test, not its
        assert netns_privacy()[1] != f"declared by {PRIVATE_ENV}=1"
