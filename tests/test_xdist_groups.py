"""The suite's tests that must share a pytest-xdist worker get one: under `--dist loadgroup` (pyproject's addopts)
a worker sends each test's group as a suffix of its node id ('...::test@group'), and the scheduler keeps a group
on one worker. pytest-xdist 3.8 writes that suffix where pytest 9.2 no longer reads it (issue #1386), and the marks
tests/conftest.py adds for module-scoped fixtures were added after pytest-xdist had read them: every group was
spread over all workers, each making the module's fixtures again (test_plot's saved results three times). Run in
one process (a file or two, or -n 0) there are no groups to keep, and these tests skip."""

from __future__ import annotations

import pytest


def _under_loadgroup(request: pytest.FixtureRequest) -> None:
    if not getattr(request.config.option, "loadgroup", False):  # set in pytest-xdist's workers only
        pytest.skip("not a pytest-xdist worker of --dist loadgroup")


@pytest.fixture(scope="module")
def made_once() -> object:
    return object()


@pytest.mark.xdist_group("test_xdist_groups")
def test_a_test_marked_with_a_group_carries_it(request: pytest.FixtureRequest) -> None:
    _under_loadgroup(request)
    assert request.node.nodeid.endswith("::test_a_test_marked_with_a_group_carries_it@test_xdist_groups")


def test_a_test_with_a_module_fixture_carries_its_files_group(
    request: pytest.FixtureRequest, made_once: object
) -> None:
    _under_loadgroup(request)
    assert request.node.nodeid.endswith("@tests/test_xdist_groups.py")


def test_a_test_without_either_carries_none(request: pytest.FixtureRequest) -> None:
    _under_loadgroup(request)
    assert "@" not in request.node.nodeid
