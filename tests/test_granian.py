"""granian --workers N as a server the tool launches: its app's request log agrees with the tool, each worker
listens on a SO_REUSEPORT socket of its own (one per worker, none the master's) that its epoll watches, its
processes and files are the tool's to remove, and what it cannot take is one line. No idle order is asserted:
the kernel's reuseport hash of each new 4-tuple decides."""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

import psutil
import pytest
from conftest import assert_one_error_line, gone, http_fetch_many, run_cli

from accept_order.core.measures import ConnectionRecord
from accept_order.core.spec import SequentialLoad, ServerSpec
from accept_order.experiments import session
from accept_order.probes.fd_table import open_files
from accept_order.probes.listeners import listening_sockets
from accept_order.servers.launched.granian import GranianServer, granian_missing
from accept_order.servers.registry import checked

if granian_missing():
    pytest.skip(f"granian launched runs: {granian_missing()}", allow_module_level=True)

CONNECTIONS = 12


def test_request_log_agrees_with_the_records_and_nothing_is_left() -> None:
    """The app's log names the same worker, in the same order, for every connection; while it runs each worker
    holds one listener of its own, which its epoll watches; after, no process and no file."""
    seen: dict[str, Any] = {}
    me = psutil.Process()

    def on_record(_: ConnectionRecord) -> None:
        if seen:
            return
        (master,) = [p for p in me.children() if "granian" in p.cmdline()]
        argv = master.cmdline()
        seen["master"], seen["workers"] = master.pid, [c.pid for c in master.children()]
        seen["directory"] = argv[argv.index("--working-dir") + 1]
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
    witness = result.evidence["witness"]
    assert witness["source"] == "granian app's request log"
    logged = [pid for pid, _ in witness["requests"]]
    assert logged == [r.pid for r in result.records]
    assert Counter(logged) == Counter(r.pid for r in result.records)
    assert [c.pid for c in result.counters] == seen["workers"]
    assert seen["listeners"] == 3
    assert seen[seen["master"]] == (set(), set())
    owned = [seen[pid][0] for pid in seen["workers"]]
    assert all(len(held) == 1 for held in owned) and len(set.union(*owned)) == 3  # one each, none shared
    assert all(seen[pid][1] == seen[pid][0] for pid in seen["workers"])  # its epoll watches its own listener
    assert gone([seen["master"], *seen["workers"]])
    assert not os.path.exists(seen["directory"])


def test_every_reply_is_in_the_log_with_its_client_port() -> None:
    """Concurrent requests, then an immediate stop: the log holds each (worker pid, client port) a client saw."""
    with GranianServer(checked(ServerSpec(kind="granian", mode="reuseport", workers=2))) as server:
        seen = http_fetch_many(server.address)
    assert sorted(map(tuple, server.witness()["requests"])) == sorted(seen)


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
