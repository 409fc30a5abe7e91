"""The contract every server kind the tool launches keeps, one test parametrised over the registry: a new kind
in `KINDS` is tested here with no edit. Each kind, in its default mode, skipped with its own `missing()` or
`unavailable(mode)` reason when it cannot run here:

- it starts, and a small sequential run through the CLI (`run --json`) is served in full;
- its own log (the witness in the run's evidence, `ServerKind.witness` its source) names, connection by
  connection and in order, the worker and the client port the tool recorded; a kind that keeps no log
  (`witness` None: the built-in workers) has no witness;
- it stops and leaves nothing: every process of the run (master, workers, helpers, the reaper) and its
  private directory are gone when the command returns;
- SIGKILL of the tool mid-run leaves nothing either (issue 16): none of the tool's handlers runs, so the
  kernel's parent-death signal and the reaper must end every process of the server (its whole session:
  one forked after we looked too) and remove its private directory.

Under concurrent load too (HAProxy aside: its log and the reply may name different threads), every request
answered before the stop is in the kind's own log.

What is particular to one kind (its wait, its herd, its settings, its messages) is in its own test file.
The tool to be SIGKILLed starts first and boots its server while the CLI run goes on here: the two take
turns on the CPUs instead of one after the other.
"""

from __future__ import annotations

import glob
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import psutil
import pytest
from conftest import gone, http_fetch_many, run_cli, wait_for
from tcp_table import connection_on

import accept_order.api
from accept_order.core.kinds import ServerKind
from accept_order.core.spec import ServerSpec
from accept_order.probes.listeners import listening_sockets
from accept_order.servers.launched.base import LaunchedServer
from accept_order.servers.registry import KINDS, checked, launched_kinds

WORKERS = 2
CONNECTIONS = 4
TCP_LISTEN = "0A"  # the state column of /proc/net/tcp


def two_free_ports() -> tuple[int, int]:
    """Two different TCP ports on 127.0.0.1 that were free a moment ago (one for each server of the test)."""
    with socket.socket() as one, socket.socket() as two:
        one.bind(("127.0.0.1", 0))
        two.bind(("127.0.0.1", 0))
        return int(one.getsockname()[1]), int(two.getsockname()[1])


def runnable_default(name: str) -> tuple[ServerKind, str]:
    """The kind and its default mode, or a skip with the kind's own reason."""
    kind = KINDS[name]
    mode = kind.default_mode()
    why = kind.missing() or kind.unavailable(mode)
    if why:
        pytest.skip(why)
    return kind, mode


def keeps_a_directory(name: str, mode: str) -> bool:
    """A server of this kind is a LaunchedServer: its config and logs live in a private directory."""
    return isinstance(KINDS[name].make(checked(ServerSpec(kind=name, mode=mode, workers=WORKERS))), LaunchedServer)


def directories(pid: int) -> list[str]:
    """The private directories of launched servers of the tool process `pid` (base.private_directory)."""
    return glob.glob(os.path.join(tempfile.gettempdir(), f"accept-order-*-{pid}-*"))


def left_in(sessions: set[int]) -> list[int]:
    """Processes of these sessions still running (zombies have ended)."""
    found = []
    for pid in psutil.pids():
        try:
            if os.getsid(pid) in sessions:
                found.append(pid)
        except OSError:
            continue  # gone meanwhile
    return [pid for pid in found if not gone([pid])]


def connected(port: int) -> bool:
    """A connection to `port` exists or existed a moment ago (not its listener): the tool has started driving,
    which it does only once the server's start has returned, every worker ready. Asked of the kernel with a port
    filter (tcp_table.py): /proc/net/tcp, read where netlink cannot be had, lists each of the host's TIME_WAITs
    (~0.2 CPU-s a read beside the suite's other tests), and psutil's net_connections would also walk every
    process's descriptors, competing with the starting server."""
    try:
        return connection_on(port)
    except OSError:
        pass
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = [line.split() for line in f.readlines()[1:]]
        except OSError:
            continue
        for row in rows:
            local, remote, state = (int(row[1].rsplit(":", 1)[1], 16), int(row[2].rsplit(":", 1)[1], 16), row[3])
            if state != TCP_LISTEN and port in (local, remote):
                return True
    return False


def descendants(procs: list[psutil.Process]) -> set[int]:
    """These processes and all their children, as far as they still run."""
    found = set()
    for proc in procs:
        found.add(proc.pid)
        try:
            found.update(child.pid for child in proc.children(recursive=True))
        except psutil.Error:
            pass
    return found


def start_the_tool_to_kill(name: str, mode: str, port: int, stderr: Path) -> subprocess.Popen[bytes]:
    """`accept-order run` in a process of its own, which will be mid-run (between connections) for 10 s."""
    argv = [sys.executable, "-m", "accept_order", "run", "--server", name, "-m", mode, "-w", str(WORKERS)]
    argv += ["-n", "3", "--gap-ms", "10000", "--port", str(port)]
    with open(stderr, "wb") as err:
        return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err)


def run_through_the_cli(name: str, mode: str, port: int, tool: subprocess.Popen[bytes], tmp_path: Path) -> None:
    """It starts, its own log equals the tool's records, it stops and leaves nothing."""
    kind = KINDS[name]
    during: dict[str, Any] = {}
    real_sequential = accept_order.api.sequential

    def sequential(*args: Any, **kwargs: Any) -> Any:
        """The CLI's run, with a look at what runs once the server listens."""

        def look(target: Any) -> None:
            # master, workers, helpers, the reaper: what we started, not the tool to be killed
            ours = descendants([p for p in psutil.Process().children() if p.pid != tool.pid])
            during["pids"] = sorted({*ours, *target.pids})  # the workers' thread ids too
            during["workers"] = list(target.pids)
            during["directories"] = directories(os.getpid())

        assert "on_started" not in kwargs
        return real_sequential(*args, on_started=look, **kwargs)

    path = tmp_path / "run.json"
    args = ["run", "--server", name, "-m", mode, "-w", str(WORKERS), "-n", str(CONNECTIONS), "--port", str(port)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(accept_order.api, "sequential", sequential, raising=False)
        run = run_cli([*args, "--json", str(path)])
    assert run.exit_code == 0, run.output

    result = json.loads(path.read_text())
    records = result["records"]
    assert len(records) == CONNECTIONS and all(r["error"] is None for r in records), records
    served_by = [[r["pid"], r["client_port"]] for r in records]
    assert {pid for pid, _ in served_by} <= set(during["workers"]) == {c["pid"] for c in result["counters"]}
    if kind.witness is None:
        assert "witness" not in result["evidence"]
    else:
        assert result["evidence"]["witness"] == {"source": kind.witness, "requests": served_by}
        said = f"{kind.witness}: the same worker for each of the {CONNECTIONS} served connections, in order"
        assert said in run.stdout

    assert len(during["pids"]) >= len(during["workers"]) >= 1
    left = [pid for pid in during["pids"] if not gone([pid])]
    assert not left, f"still running after the run: {left}"
    assert len(during["directories"]) == keeps_a_directory(name, mode)
    assert not [d for d in during["directories"] if os.path.exists(d)]


def kill_mid_run(name: str, mode: str, port: int, tool: subprocess.Popen[bytes], stderr: Path) -> None:
    """Once the tool drives its server, SIGKILL it: every process it started (the server's whole session,
    one forked after we looked too) ends, and its private directory goes, within a bounded wait."""
    pids: list[int] = []
    sessions: set[int] = set()  # the server's (its master leads one) and the reaper's
    ended = False
    try:

        def up() -> bool:
            if tool.poll() is not None:
                pytest.fail(f"the tool exited with {tool.returncode}: {stderr.read_text()}")
            # no connection before the server listens: that question first, of the listeners alone (cheap)
            return bool(listening_sockets(port)) and connected(port)

        wait_for(up, bool, 30.0, f"the tool's first connection to {name}")
        pids = sorted(descendants(psutil.Process(tool.pid).children()))
        for pid in pids:
            try:
                sessions.add(os.getsid(pid))
            except OSError:
                pass
        sessions.discard(os.getsid(0))  # ours: the tool's own children (built-in workers) are in `pids`
        # Something to watch, or every check below passes on nothing: a launched server leads a session of
        # its own; the built-in workers are the tool's children.
        if keeps_a_directory(name, mode):
            assert sessions, f"no session of {name}'s among the tool's processes {pids}"
        else:
            assert len(pids) >= WORKERS, pids
        private = directories(tool.pid)
        assert len(private) == keeps_a_directory(name, mode)
        tool.send_signal(signal.SIGKILL)
        assert tool.wait() == -signal.SIGKILL  # it was still running: killed mid-run

        wait_for(lambda: [pid for pid in pids if not gone([pid])], lambda alive: not alive, 5.0, "every process to end")
        wait_for(lambda: left_in(sessions), lambda alive: not alive, 5.0, f"every process of {name}'s session to end")
        wait_for(lambda: directories(tool.pid), lambda found: not found, 5.0, "the private directory to go")
        ended = True
    finally:
        if not ended:  # a failure: what the tool started must not keep running (nor hold the port) after us
            for pid in {*(pid for pid in pids if not gone([pid])), *left_in(sessions)}:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass


@pytest.mark.parametrize("name", launched_kinds())
def test_the_kind_keeps_the_contract(name: str, tmp_path: Path) -> None:
    _, mode = runnable_default(name)
    run_port, kill_port = two_free_ports()
    stderr = tmp_path / "killed-tool.stderr"
    tool = start_the_tool_to_kill(name, mode, kill_port, stderr)
    try:
        try:
            run_through_the_cli(name, mode, run_port, tool, tmp_path)
        finally:  # whatever the run did: the tool is killed, and what it leaves is checked
            kill_mid_run(name, mode, kill_port, tool, stderr)
    finally:
        if tool.poll() is None:  # it never drove its server
            tool.kill()
            tool.wait()


# Kinds whose log names the worker that served each request even under concurrent load: not one that hands an
# accepted connection to another thread's queue (HAProxy: its log and the reply may name different threads).
LOGGED_UNDER_LOAD = [k for k in launched_kinds() if KINDS[k].witness is not None and KINDS[k].handoff is None]


@pytest.mark.parametrize("name", LOGGED_UNDER_LOAD)
def test_every_request_in_hand_at_the_stop_is_in_its_log(name: str) -> None:
    """Concurrent requests, then the stop at once: the server's log holds each (worker pid, client port) the
    replies named, none lost to the stop, and nothing of it is left."""
    kind, mode = runnable_default(name)
    target = kind.make(checked(ServerSpec(kind=name, mode=mode, workers=WORKERS)))
    assert isinstance(target, LaunchedServer)
    with target as server:
        pids = [*(p.pid for p in [server.master] if p is not None), *server.pids]
        directory = server.directory
        seen = http_fetch_many(server.address)
    assert sorted(map(tuple, server.witness()["requests"])) == sorted(seen)
    assert gone(pids) and not os.path.exists(directory)
