"""--accept-batch on a mode whose accepts follow no cap (ModeInfo.batches False: the built-in blocking, fd-pass and
io-uring) follows 6f42fc5's rule for the kind options: `run -m blocking --accept-batch 4` ran without a word, where
every launched server refuses it, and `latency --modes epoll,fd-pass --accept-batch 4` saved fd-pass's run with a cap
its acceptor never read. Now a cap no mode asked reads is refused in one line before anything starts (0 and 1, no
cap, are taken, as the launched kinds take them, so a sweep of such a mode over them runs and says so); several modes
keep it where it is read and have their kind's default elsewhere, whichever server is named first."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.core import netns
from accept_order.core.errors import PlanError
from accept_order.core.spec import ServerSpec
from accept_order.experiments import session
from accept_order.experiments.reload.run import plans
from accept_order.servers.registry import checked, variants

CAPS = "--accept-batch caps the connections one wakeup accepts"


@pytest.fixture
def nothing_starts(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every server a run would start (none must), and no private namespace made (reload's)."""
    started: list[Any] = []

    def make_target(spec: ServerSpec, stamps: bool = False) -> Any:
        started.append(spec)
        raise AssertionError(f"{spec.label} started before its cap was refused")

    def enter_private() -> None:
        started.append("netns")
        raise AssertionError("a private network namespace was made before the cap was refused")

    monkeypatch.setattr(session, "make_target", make_target)
    monkeypatch.setattr(netns, "enter_private", enter_private)
    return started


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["run", "-m", "blocking", "--accept-batch", "4"], f"{CAPS}; the built-in blocking mode does not read it"),
        (["latency", "-m", "io-uring", "--accept-batch", "4"], f"{CAPS}; the built-in io-uring mode does not read it"),
        (["serve", "-m", "fd-pass", "--accept-batch", "2"], f"{CAPS}; the built-in fd-pass mode does not read it"),
        # sweep's own caps (1,4,32,0): refused up front, as 0e15abd refuses uvicorn's
        (["sweep", "-m", "fd-pass"], f"{CAPS}; the built-in fd-pass mode does not read it"),
        (
            ["compare", "--modes", "blocking,fd-pass", "--accept-batch", "4"],
            f"{CAPS}; the built-in blocking and fd-pass modes do not read it",
        ),
        (
            ["reload", "--modes", "blocking,io-uring", "--accept-batch", "4"],
            f"{CAPS}; the built-in blocking and io-uring modes do not read it",
        ),
    ],
)
def test_a_cap_no_mode_asked_reads_is_refused_in_one_line(
    nothing_starts: list[Any], args: list[str], line: str
) -> None:
    result = run_cli(args)
    said = assert_one_error_line(result, 2, line)
    assert said == f"accept-order: error: {line} (0 or 1: no cap)"
    assert result.stdout == "" and nothing_starts == []


def test_no_cap_is_taken_as_the_launched_kinds_take_it() -> None:
    assert checked(ServerSpec(mode="io-uring", accept_batch=1)).accept_batch == 1
    assert checked(ServerSpec(mode="epoll", accept_batch=4)).accept_batch == 4
    with pytest.raises(PlanError, match=f"^{CAPS}; the built-in blocking mode does not read it"):
        checked(ServerSpec(mode="blocking", accept_batch=4))  # the Python API's spec, as the command line's


def test_several_modes_keep_the_cap_where_it_is_read() -> None:
    specs, _ = variants(ServerSpec(accept_batch=4), ["epoll", "fd-pass", "blocking"])
    assert {s.mode: s.accept_batch for s in specs} == {"epoll": 4, "fd-pass": 0, "blocking": 0}
    reloads = {
        spec.mode: spec.accept_batch
        for spec, _ in plans(ServerSpec(accept_batch=4), ["epoll", "io-uring"], ["leave"], [0])
    }
    assert reloads == {"epoll": 4, "io-uring": 0}


def test_the_first_server_named_does_not_refuse_a_cap_another_reads() -> None:
    """`latency --server gunicorn,builtin --accept-batch 4`: gunicorn's own check refused the shared settings, where
    `--server builtin,gunicorn` ran; both now run the cap on the built-in workers alone."""
    from accept_order.cli.specs import first_available, server_spec

    for servers in (["gunicorn", "builtin"], ["builtin", "gunicorn"]):
        options: dict[str, Any] = {"server": servers, "accept_batch": 4, "workers": 2}
        base = server_spec(options, mode=first_available(["default"], servers), varied=True)
        specs, _ = variants(base, ["default"], servers)
        assert {(s.kind, s.mode): s.accept_batch for s in specs} == {("gunicorn", "select"): 0, ("builtin", "epoll"): 4}
