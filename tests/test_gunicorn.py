"""gunicorn (PyPI, 23+) as a server the tool launches: its access log agrees with the tool, reuse_port gives
each worker its own listener (the kernel says so), its processes and files are the tool's to remove, and a
missing or too old gunicorn is one line."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import psutil
import pytest
from conftest import gone, run_cli

from accept_order.core.spec import ConcurrentLoad, SequentialLoad, ServerSpec
from accept_order.experiments import session
from accept_order.experiments.order.result import RunResult
from accept_order.servers.launched.gunicorn import gunicorn_missing

if gunicorn_missing():
    pytest.skip(f"gunicorn launched runs: {gunicorn_missing()}", allow_module_level=True)

CONNECTIONS = 24


def gunicorn_run(mode: str, connections: int = CONNECTIONS, **spec: object) -> RunResult:
    server = ServerSpec(kind="gunicorn", mode=mode, workers=3, **spec)  # type: ignore[arg-type]
    return session.run_sequential(server, SequentialLoad(connections=connections))


@pytest.mark.parametrize("mode", ["select", "reuseport"])
def test_access_log_agrees_with_the_records(mode: str) -> None:
    result = gunicorn_run(mode)
    assert result.failed == 0 and result.served == CONNECTIONS, result.records
    witness = result.evidence["witness"]
    assert witness["source"] == "gunicorn access log"
    log_pids = [pid for pid, _ in witness["requests"]]
    assert log_pids == [r.pid for r in result.records]
    # per-worker counts: gunicorn's own tally by pid, in worker order, is the tool's tally
    by_pid = Counter(log_pids)
    assert [by_pid[c.pid] for c in sorted(result.counters, key=lambda c: c.index)] == result.counts
    assert sum(result.counts) == CONNECTIONS and set(by_pid) <= {c.pid for c in result.counters}
    assert all(1 <= port <= 65535 and port != result.port for _, port in witness["requests"])  # client ports


def test_reuse_port_gives_each_worker_its_own_listener() -> None:
    """gunicorn 23+ opens one SO_REUSEPORT socket per worker after the fork: three sockets (three inodes) on
    one port, and the verdict is the hash the mode's metadata names, not an idle order."""
    result = gunicorn_run("reuseport", connections=6)
    listeners = result.evidence["listeners"]["start"]
    assert len(listeners) == 3 and len({row["inode"] for row in listeners}) == 3, listeners
    assert {row["port"] for row in listeners} == {result.port}
    assert result.verdict.pattern.startswith("hash-spread"), result.verdict
    assert result.failed == 0 and result.served == 6


def test_select_shares_the_masters_socket_and_wakes_every_worker() -> None:
    """By default every sync worker waits in select() on the master's one socket: a non-exclusive wait, so
    each connection wakes every idle worker, and each goes back to sleep (one voluntary switch) whether it
    won the accept or not. The run settles (every worker asleep) before each connection."""
    result = gunicorn_run("select")
    (listener,) = result.evidence["listeners"]["start"]
    assert listener["port"] == result.port
    assert result.failed == 0 and result.served == CONNECTIONS
    switches = [c.voluntary_switches for c in result.counters]
    assert len(switches) == 3 and None not in switches, switches
    # The last connection's losers may not be back asleep when the counters are read: hence - 1.
    assert min(s for s in switches if s is not None) >= CONNECTIONS - 1, switches
    assert not result.verdict.pattern.startswith("hash-spread"), result.verdict


def test_processes_and_files_are_the_tools(tmp_path: Path) -> None:
    seen: dict[str, object] = {}
    me = psutil.Process()

    def on_record(_: object) -> None:
        if "master" not in seen:
            (master,) = [p for p in me.children() if "gunicorn" in " ".join(p.cmdline())]
            seen["master"] = master.pid
            seen["workers"] = [w.pid for w in master.children()]
            conf = master.cmdline()[master.cmdline().index("-c") + 1]
            seen["directory"] = os.path.dirname(conf)

    home = os.path.expanduser("~/.gunicorn")
    existed = os.path.exists(home)
    server = ServerSpec(kind="gunicorn", mode="select", workers=2, work_us=200)
    result = session.run_sequential(server, SequentialLoad(connections=5), on_record)
    assert result.served == 5
    assert gone([seen["master"], *seen["workers"]])  # type: ignore[list-item]
    assert not os.path.exists(str(seen["directory"]))
    assert os.path.exists(home) == existed  # no control socket left in the home directory


def test_under_load_every_connection_is_counted() -> None:
    # Counting is the point, not speed: a connection may wait a long while for a sync worker on a busy machine
    # (2 of 600 passed the default 10 s in a CI run at load 15), so the client waits up to a minute.
    result = session.run_latency(
        ServerSpec(kind="gunicorn", mode="reuseport", workers=2),
        ConcurrentLoad(connections=600, concurrency=8, timeout_s=60.0),
    )
    assert result.errors == {} and sum(result.served) == 600 and all(n > 0 for n in result.served)


def test_cli_compares_builtin_and_gunicorn_in_one_table() -> None:
    result = run_cli(["compare", "--server", "builtin,gunicorn", "--modes", "select,reuseport", "-n", "6"])
    assert result.exit_code == 0, result.output
    rows = [line.split()[:2] for line in result.stdout.splitlines() if line.strip().startswith(("builtin", "gunicorn"))]
    assert rows == [["builtin", "select"], ["builtin", "reuseport"], ["gunicorn", "select"], ["gunicorn", "reuseport"]]


def test_a_missing_gunicorn_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib import metadata

    real = metadata.version
    monkeypatch.setattr(metadata, "version", lambda name: "20.1.0" if name == "gunicorn" else real(name))
    assert "gunicorn 20.1.0 is too old" in (gunicorn_missing() or "")
