"""gunicorn (PyPI, 23+) as a server the tool launches: its access log agrees with the tool, reuse_port gives
each worker its own listener (the kernel says so), its processes and files are the tool's to remove, and a
missing or too old gunicorn is one line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from conftest import gone

from accept_order import session
from accept_order.experiments.order.result import RunResult
from accept_order.servers.launched.gunicorn import gunicorn_missing
from accept_order.spec import ClosedLoopLoad, SequentialLoad, ServerSpec

if gunicorn_missing():
    pytest.skip(f"gunicorn launched runs: {gunicorn_missing()}", allow_module_level=True)

CONNECTIONS = 24


def gunicorn_run(mode: str, connections: int = CONNECTIONS, **spec: object) -> RunResult:
    server = ServerSpec(server="gunicorn", mode=mode, workers=3, **spec)  # type: ignore[arg-type]
    return session.run_sequential(server, SequentialLoad(connections=connections))


@pytest.mark.parametrize("mode", ["select", "reuseport"])
def test_access_log_agrees_with_the_records(mode: str) -> None:
    result = gunicorn_run(mode)
    assert result.failed == 0 and result.served == CONNECTIONS, result.records
    witness = result.evidence["witness"]
    assert witness["source"] == "gunicorn access log"
    assert [pid for pid, _ in witness["requests"]] == [r.pid for r in result.records]
    assert {r.pid for r in result.records} <= {c.pid for c in result.counters}


@pytest.mark.parametrize(("mode", "listeners"), [("select", 1), ("reuseport", 3)])
def test_reuse_port_gives_each_worker_its_own_listener(mode: str, listeners: int) -> None:
    """gunicorn 23+ opens one SO_REUSEPORT socket per worker after the fork; by default the master's one."""
    result = gunicorn_run(mode, connections=6)
    assert len(result.evidence["listeners"]["start"]) == listeners
    assert result.verdict.expected  # reuseport: hash-spread; select: a herd predicts no order


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
    server = ServerSpec(server="gunicorn", mode="select", workers=2, work_us=200)
    result = session.run_sequential(server, SequentialLoad(connections=5), on_record)
    assert result.served == 5
    assert gone([seen["master"], *seen["workers"]])  # type: ignore[list-item]
    assert not os.path.exists(str(seen["directory"]))
    assert os.path.exists(home) == existed  # no control socket left in the home directory


def test_under_load_every_connection_is_counted() -> None:
    result = session.run_closed_loop(
        ServerSpec(server="gunicorn", mode="reuseport", workers=2), ClosedLoopLoad(connections=600, concurrency=8)
    )
    assert result.errors == {} and sum(result.served) == 600 and all(n > 0 for n in result.served)


def test_cli_compares_builtin_and_gunicorn_in_one_table() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "accept_order", "compare", "--server", "builtin,gunicorn", "--modes", "select,reuseport"]
        + ["-n", "6"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    rows = [line.split()[:2] for line in proc.stdout.splitlines() if line.strip().startswith(("builtin", "gunicorn"))]
    assert rows == [["builtin", "select"], ["builtin", "reuseport"], ["gunicorn", "select"], ["gunicorn", "reuseport"]]


def test_a_missing_gunicorn_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib import metadata

    real = metadata.version
    monkeypatch.setattr(metadata, "version", lambda name: "20.1.0" if name == "gunicorn" else real(name))
    assert "gunicorn 20.1.0 is too old" in (gunicorn_missing() or "")
