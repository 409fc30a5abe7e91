"""granian --workers N as a server the tool launches: each worker listens on a SO_REUSEPORT socket of its own
(one per worker, none the master's) that its epoll watches, and what it cannot take is one line. That its
app's request log agrees with the tool and that it leaves nothing, run or SIGKILLed: the contract every
launched kind keeps (test_kind_contract.py). No idle order is asserted: the kernel's reuseport hash of each
new 4-tuple decides."""

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
from accept_order.servers.launched.granian import granian_missing

if granian_missing():
    pytest.skip(f"granian launched runs: {granian_missing()}", allow_module_level=True)

CONNECTIONS = 12


def test_each_worker_holds_a_listener_of_its_own_that_its_epoll_watches() -> None:
    """While it runs each worker holds one listener of its own (none shared, none the master's), which its
    epoll watches."""
    seen: dict[str, Any] = {}
    me = psutil.Process()

    def on_record(_: ConnectionRecord) -> None:
        if seen:
            return
        (master,) = [p for p in me.children() if "granian" in p.cmdline()]
        argv = master.cmdline()
        seen["master"], seen["workers"] = master.pid, [c.pid for c in master.children()]
        listeners = {row.inode for row in listening_sockets(int(argv[argv.index("--port") + 1]))}
        seen["listeners"] = len(listeners)
        for pid in [master.pid, *seen["workers"]]:
            files = open_files(pid).values()
            held = {f.inode for f in files if f.kind == "socket"} & listeners
            watched = {w.inode for f in files for w in f.watches} & listeners
            seen[pid] = (held, watched)

    spec = ServerSpec(kind="granian", mode="reuseport", workers=3)
    result = session.run_sequential(spec, SequentialLoad(connections=CONNECTIONS), on_record)
    assert result.failed == 0 and result.served == CONNECTIONS, result.records
    assert [c.pid for c in result.counters] == seen["workers"]
    assert seen["listeners"] == 3
    assert seen[seen["master"]] == (set(), set())
    owned = [seen[pid][0] for pid in seen["workers"]]
    assert all(len(held) == 1 for held in owned) and len(set.union(*owned)) == 3  # one each, none shared
    assert all(seen[pid][1] == seen[pid][0] for pid in seen["workers"])  # its epoll watches its own listener


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--accept-batch", "4"], "--accept-batch does not apply to granian"),
        (["--backlog", "64"], "granian takes --backlog 128 or more, got 64"),
    ],
)
def test_what_it_cannot_take_is_refused(args: list[str], message: str) -> None:
    result = run_cli(["run", "--server", "granian", *args, "-n", "3"])
    assert_one_error_line(result, 2, message)


def test_a_missing_or_old_granian_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    def version(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", version)
    assert granian_missing() == (
        "granian is not installed: pip install 'accept-order[servers]' (granian>=2.8)"
        ", or from a clone: pip install '.[servers]'"
    )
    monkeypatch.setattr(importlib.metadata, "version", lambda name: "2.7.9")
    assert granian_missing() == (
        "granian 2.7.9 is too old (before 2.8 its workers share one socket on Linux): "
        "pip install 'accept-order[servers]' (granian>=2.8), or from a clone: pip install '.[servers]'"
    )
