"""uvicorn --workers N as a server the tool launches: in both loops every worker's own epoll watches the
supervisor's one listener without EPOLLEXCLUSIVE (the herd the modes claim), the resource tracker is not taken
for a worker, and a missing package is one line. That its app's request log agrees with the tool and that it
leaves nothing, run or SIGKILLed: the contract every launched kind keeps (test_kind_contract.py). No idle order
is asserted: a herd's winner is the scheduler's choice."""

from __future__ import annotations

from typing import Any

import psutil
import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.core.measures import ConnectionRecord
from accept_order.core.spec import SequentialLoad, ServerSpec
from accept_order.experiments import session
from accept_order.probes.fd_table import open_files
from accept_order.probes.listeners import listening_sockets
from accept_order.servers.launched.uvicorn import UvicornKind, uvicorn_missing
from accept_order.servers.registry import runnable

if uvicorn_missing():
    pytest.skip(f"uvicorn launched runs: {uvicorn_missing()}", allow_module_level=True)

CONNECTIONS = 12
MODES = list(UvicornKind().modes())


def listener_watches(pid: int, inode: int) -> list[int]:
    """The events mask of every epoll of `pid` that watches `inode`."""
    return [w.events for f in open_files(pid).values() for w in f.watches if w.inode == inode]


@pytest.mark.parametrize("mode", MODES)
def test_every_worker_watches_the_one_listener_without_epollexclusive(mode: str) -> None:
    """While it runs each worker holds the one listener in an epoll of its own without EPOLLEXCLUSIVE, and the
    resource tracker is no worker. (The app's log agrees with the records in the default loop by
    test_kind_contract.py; here also with uvloop.)"""
    if runnable("uvicorn", [mode])[1]:
        pytest.skip(runnable("uvicorn", [mode])[1][mode])
    seen: dict[str, Any] = {}
    me = psutil.Process()

    def on_record(_: ConnectionRecord) -> None:
        if seen:
            return
        (master,) = [p for p in me.children() if "uvicorn" in p.cmdline()]
        seen["children"] = [c.pid for c in master.children()]
        (listener,) = listening_sockets(int(master.cmdline()[master.cmdline().index("--port") + 1]))
        seen["watches"] = {pid: listener_watches(pid, listener.inode) for pid in seen["children"]}

    spec = ServerSpec(kind="uvicorn", mode=mode, workers=3)
    result = session.run_sequential(spec, SequentialLoad(connections=CONNECTIONS), on_record)
    assert result.failed == 0 and result.served == CONNECTIONS, result.records
    assert result.evidence["witness"]["requests"] == [[r.pid, r.client_port] for r in result.records]
    workers = [c.pid for c in result.counters]
    # the supervisor's children: the 3 workers and multiprocessing's resource tracker, which holds no listener
    assert len(seen["children"]) == 4 and set(workers) < set(seen["children"])
    assert all(seen["watches"][pid] for pid in workers)
    assert all(events & (1 << 28) == 0 for pid in workers for events in seen["watches"][pid])  # no EPOLLEXCLUSIVE
    (tracker,) = set(seen["children"]) - set(workers)
    assert seen["watches"][tracker] == []


def test_accept_batch_is_refused() -> None:
    result = run_cli(["run", "--server", "uvicorn", "--accept-batch", "4", "-n", "3"])
    assert_one_error_line(result, 2, "--accept-batch does not apply to uvicorn")


def test_a_missing_package_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    missing = {"uvloop"}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in missing else real(name, *a))
    assert runnable("uvicorn", ["asyncio", "uvloop"]) == (
        ["asyncio"],
        {
            "uvloop": (
                "uvloop is not installed: pip install 'accept-order[servers]' (uvloop)"
                ", or from a clone: pip install '.[servers]'"
            )
        },
    )
    missing.add("uvicorn")
    assert UvicornKind().missing() == (
        "uvicorn is not installed: pip install 'accept-order[servers]' (uvicorn)"
        ", or from a clone: pip install '.[servers]'"
    )
