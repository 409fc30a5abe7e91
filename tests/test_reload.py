"""`accept-order reload`: one worker goes mid-load. What is asserted is what the kernel promises:
- a worker that leaves a shared queue (or an acceptor's rota) loses nothing;
- a reuseport listener that closes with net.ipv4.tcp_migrate_req=1 loses nothing;
- a killed worker loses only what it held, which the kernel closes with a FIN (no reply), never a reset from
  a queue (shared queue, or reuseport with migration);
- every connection the load generator finished is served or failed; the host's tcp_migrate_req is untouched.
The command runs in a private network namespace of its own, so it needs root; without, it must say so.

The load aims to keep the queues full (32 clients in a closed loop against 3 workers that each spend 5 ms of CPU
on a connection), so that a row that loses nothing usually had something to lose. How much is queued at the
moment a worker goes still depends on the machine (on a busy one the clients, not the workers, may set the
pace), so the rows only bound what may be lost; that the loss happens where the kernel promises nothing is
shown by construction with the worker pool: a worker stopped (SIGSTOP) while connections queue for it."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.core import netns
from accept_order.core.netns import MIGRATE_REQ, read_sysctl
from accept_order.core.spec import ServerSpec
from accept_order.core.waiting import wait_for
from accept_order.experiments.reload.result import MIGRATE, ReloadResult, expectation
from accept_order.servers.pool import WorkerPool

COMMAND = [sys.executable, "-m", "accept_order", "reload"]
LOAD = ["-w", "3", "-c", "32", "--work-ms", "5", "--duration", "300ms"]


def reload(tmp_path: Path, name: str, *args: str) -> dict[str, Any]:
    out = tmp_path / f"{name}.json"
    before = read_sysctl(MIGRATE_REQ)
    proc = subprocess.run([*COMMAND, *LOAD, *args, "--json", str(out)], capture_output=True, text=True, timeout=120)
    if proc.returncode != 0 and "cannot make a private network namespace" in proc.stderr:
        pytest.skip(proc.stderr.strip())
    assert proc.returncode == 0, proc.stderr
    assert read_sysctl(MIGRATE_REQ) == before  # the host's setting, never changed
    doc = json.loads(out.read_text())
    assert doc["kind"] == "reload"
    return doc


def runs(doc: dict[str, Any]) -> dict[tuple[str, str, int], dict[str, Any]]:
    return {(r["server"]["mode"], r["how"], r["migrate"]): r for r in doc["runs"]}


def _every_connection_counted(run: dict[str, Any]) -> None:
    assert sum(run["served"]) + sum(run["errors"].values()) == run["finished"] > 0
    assert run["at_s"] is not None and run["gone_s"] is not None, run  # the worker did go, in time
    assert run["evidence"]["netns"]["private"] is True


@pytest.fixture(scope="module")
def leave(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("reload")
    return reload(tmp, "leave", "--modes", "epoll,fd-pass,reuseport", "--how", "leave", "--migrate", "0,1")


def test_a_worker_leaving_loses_nothing_where_the_kernel_promises_it(leave: dict[str, Any]) -> None:
    found = runs(leave)
    assert set(found) == {("epoll", "leave", 0), ("fd-pass", "leave", 0), ("reuseport", "leave", 0)} | {
        ("reuseport", "leave", 1)
    }
    for run in found.values():
        _every_connection_counted(run)
    for key in (("epoll", "leave", 0), ("fd-pass", "leave", 0), ("reuseport", "leave", 1)):
        run = found[key]
        assert run["errors"] == {}, (key, run["errors"])
        assert run["served"][0] > 0 and min(run["served"][1:]) > 0, (key, run["served"])


def test_a_closed_reuseport_listener_loses_only_by_reset(leave: dict[str, Any]) -> None:
    """The one leave the kernel makes no promise for: what it loses is the closed listener's queue, reset
    (ECONNRESET), and nothing is migrated (the counters are the run's own namespace's). How much was queued at
    that moment depends on the machine; the tests below queue connections there on purpose."""
    reset = runs(leave)[("reuseport", "leave", 0)]
    assert set(reset["errors"]) <= {"ECONNRESET"}, reset["errors"]
    assert MIGRATE not in reset["counters"], reset["counters"]


def reply_or_error(client: socket.socket) -> str:
    """What a client of the built-in workers got: "worker N", "ECONNRESET" or "no reply" (an end, no reply)."""
    try:
        data = client.recv(100)
    except ConnectionResetError:
        return "ECONNRESET"
    finally:
        client.close()
    return " ".join(data.decode().split()[:2]) if data else "no reply"


def test_a_closing_reuseport_listener_resets_exactly_what_was_queued_on_it() -> None:
    """Worker 0 is stopped (SIGSTOP) while 24 connections are made: those the reuseport hash sends to its
    listener wait in its queue, worker 1 answers the rest. Told to leave, then continued, worker 0 takes one
    (--accept-batch 1), answers it, and closes its listener: with tcp_migrate_req=0 the kernel resets every
    connection still queued there; with 1 it moves them to worker 1's listener and nothing is lost."""
    migrate = read_sysctl(MIGRATE_REQ)
    if migrate not in ("0", "1"):
        pytest.skip(f"net.ipv4.tcp_migrate_req is {migrate!r} here")
    with WorkerPool(ServerSpec(mode="reuseport", workers=2, accept_batch=1).validated()) as pool:
        os.kill(pool.pids[0], signal.SIGSTOP)
        try:
            assert pool.retire(0, "leave", timeout_s=0) is False  # stopped: it cannot have gone
            clients = [socket.create_connection(pool.address, timeout=5) for _ in range(24)]
        finally:
            os.kill(pool.pids[0], signal.SIGCONT)
        outcomes = Counter(reply_or_error(client) for client in clients)
        assert wait_for(lambda: pool.procs[0].exitcode is not None, 5), "worker 0 did not leave"
        pool.stop()
    assert outcomes["worker 0"] == 1, outcomes
    assert set(outcomes) <= {"worker 0", "worker 1", "ECONNRESET"}, outcomes
    if migrate == "0":
        # All 23 others hashing to worker 1's listener has probability 25 / 2**24.
        assert outcomes["ECONNRESET"] > 0, outcomes
    else:
        assert outcomes["ECONNRESET"] == 0 and outcomes["worker 1"] == 23, outcomes


def test_a_killed_fd_pass_worker_loses_what_the_acceptor_handed_it() -> None:
    """Worker 0 is stopped while 6 connections come: the acceptor hands them round-robin, so two wait in
    worker 0's socket while workers 1 and 2 answer theirs. SIGKILLed, worker 0 loses exactly those two: the
    kernel closes them (the client reads the end, no reply), and the acceptor counted them handed."""
    with WorkerPool(ServerSpec(mode="fd-pass", workers=3).validated()) as pool:
        os.kill(pool.pids[0], signal.SIGSTOP)
        try:
            clients = [socket.create_connection(pool.address, timeout=5) for _ in range(6)]
            answered = [reply_or_error(clients[i]) for i in (1, 2, 4, 5)]
        finally:
            assert pool.retire(0, "kill")  # SIGKILL ends a stopped process too
        lost = [reply_or_error(clients[i]) for i in (0, 3)]
        pool.stop()
        report = pool.helper.report
    assert answered == ["worker 1", "worker 2", "worker 1", "worker 2"]
    assert lost == ["no reply", "no reply"]
    assert report is not None and report["passed"] == [2, 2, 2], report


def test_the_saved_reload_renders(leave: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "again.json"
    path.write_text(json.dumps(leave))
    result = run_cli(["show", str(path)])
    assert result.exit_code == 0, result.output
    assert "accept-order reload" in result.stdout and "What the kernel promises" in result.stdout


def test_a_killed_worker_loses_only_what_it_held(tmp_path: Path) -> None:
    doc = reload(tmp_path, "kill", "--modes", "blocking,fd-pass,reuseport", "--how", "kill", "--migrate", "1")
    found = runs(doc)
    assert set(found) == {("blocking", "kill", 0), ("fd-pass", "kill", 0), ("reuseport", "kill", 1)}
    for key, run in found.items():
        _every_connection_counted(run)
        assert set(run["errors"]) <= {"no reply"}, (key, run["errors"])  # closed by the kernel, not reset
        # `held` is a lower bound (a worker publishes its count once a batch is accepted): never more than lost.
        assert run["held"] is not None and sum(run["errors"].values()) >= run["held"], (key, run)
    passed = found[("fd-pass", "kill", 0)]
    assert passed["held"] == passed["evidence"]["acceptor"]["passed"][0] - passed["served"][0]
    assert sum(passed["errors"].values()) == passed["held"]  # the acceptor's count is exact


@pytest.mark.parametrize(
    "args, message",
    [
        (["-n", "100"], "No such option '-n'"),  # reload runs for a --duration: its help has no -n
        (["--server", "nginx"], "reload runs builtin only"),
        (["-w", "1"], "at least 2 workers"),
        (["-w", "3", "--worker", "3"], "--worker"),
        (["--how", "crash"], "--how"),
        (["--migrate", "2"], "--migrate"),
        # the run looks every 100 ms to tell the worker: under 200 ms it was told after the load had ended
        (["--duration", "1ms"], "the shortest --duration at --at 0.5 is 200 ms"),
        (["--duration", "900ms", "--at", "0.9"], "the shortest --duration at --at 0.9 is 1000 ms"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(monkeypatch: pytest.MonkeyPatch, args: list[str], message: str) -> None:
    def refuse() -> int:
        raise AssertionError("a private network namespace was made before the input was checked")

    monkeypatch.setattr(netns, "enter_private", refuse)
    result = run_cli(["reload", *args])
    assert_one_error_line(result, 2, message)
    assert result.stdout == ""


@pytest.mark.parametrize("at, shortest", [(0.5, 0.2), (0.1, 0.2), (0.75, 0.4), (0.9, 1.0)])
def test_the_shortest_duration_leaves_a_look_after_the_worker_is_told(at: float, shortest: float) -> None:
    """The worker is told at a look (every 100 ms, the first at 100 ms): at most a look after --at's moment, at
    100 ms the soonest. The load must run a look past that: a --duration that allows it passes, a millisecond
    less is refused."""
    from accept_order.core.errors import PlanError
    from accept_order.core.spec import ConcurrentLoad
    from accept_order.experiments.reload.run import ReloadPlan

    server = ServerSpec(workers=3)
    plan = ReloadPlan(at=at)
    assert plan.validated(server, ConcurrentLoad(connections=None, duration_s=shortest)) is plan
    with pytest.raises(PlanError, match=f"is {round(shortest * 1000)} ms"):
        plan.validated(server, ConcurrentLoad(connections=None, duration_s=shortest - 0.001))


def test_what_the_kernel_promises() -> None:
    assert expectation("shared", False, "leave", 0).bound == "none"
    assert expectation("shared", True, "leave", 0).bound == "none"
    assert expectation("per-worker", False, "leave", 1).bound == "none"
    assert expectation("per-worker", False, "leave", 0).bound == "any"
    assert expectation("shared", False, "kill", 0).bound == "held"
    assert expectation("per-worker", False, "kill", 1).bound == "held"
    assert expectation("per-worker", False, "kill", 0).bound == "any"
    assert ReloadResult.from_dict({"runs": []}).runs == ()


@pytest.mark.parametrize("group", [False, True], ids=["ctrl-c-then-sigterm", "ctrl-c-to-the-group"])
def test_interrupted_reload_keeps_what_it_measured_and_leaves_nothing(tmp_path: Path, group: bool) -> None:
    import os
    import signal
    import time

    import psutil
    from conftest import gone, wait_for

    out = tmp_path / "partial.json"
    # The load outlasts any wait below (it is interrupted well before its end), and the waits end at their event:
    # their deadlines are for a hang only, so a busy machine's slow start is not one.
    cmd = [*COMMAND, "--modes", "epoll", "--how", "leave", "-w", "2", "-c", "8", "--duration", "600s"]
    proc = subprocess.Popen(
        [*cmd, "--json", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=group,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.default_int_handler),
    )

    def running(value: Any) -> Any:
        """The probe's value while reload runs; once it has exited (before the signal), its own words, not a wait
        that times out with nothing to show."""
        if proc.poll() is not None:
            _, said = proc.communicate()
            if "cannot make a private network namespace" in said:
                pytest.skip(said.strip())
            pytest.fail(f"reload exited {proc.returncode} before it was interrupted: {said.strip()[-2000:]}")
        return value

    try:
        me = psutil.Process(proc.pid)
        wait_for(lambda: running(me.children()), lambda kids: len(kids) >= 4, 120, "the workers and the drivers")
        pids = [p.pid for p in me.children(recursive=True)]
        cpu = lambda: running(sum(psutil.Process(p).cpu_times().user for p in pids))  # noqa: E731
        wait_for(cpu, lambda used: used > 0.2, 120, "the load")
        if group:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGINT)
            time.sleep(0.01)  # a second signal 10 ms later, not synchronisation
            proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    if "cannot make a private network namespace" in err:
        pytest.skip(err.strip())
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert wait_for(lambda: gone(pids), bool, 5, "every child to be gone")
    doc = json.loads(out.read_text())
    assert doc["interrupted"] is True and doc["runs"][0]["interrupted"] is True
    assert sum(doc["runs"][0]["served"]) > 0


def test_io_uring_worker_that_leaves_cancels_its_accept_and_loses_nothing(tmp_path: Path) -> None:
    """Its armed multishot accept holds the listener: leaving cancels it and serves what it had accepted."""
    from accept_order.servers.modes import MODES

    if MODES["io-uring"].unavailable():
        pytest.skip(MODES["io-uring"].unavailable())
    found = runs(reload(tmp_path, "uring", "--modes", "io-uring", "--how", "leave,kill"))
    for run in found.values():
        _every_connection_counted(run)
    assert found[("io-uring", "leave", 0)]["errors"] == {}
    killed = found[("io-uring", "kill", 0)]["errors"]
    # What holds: the shared queue never resets a connection, and what is lost is what the killed ring held (no
    # reply). Often here (Linux 6.18: 8 of 13 runs of this load at load 12; about one in six in earlier sessions),
    # after worker 0 is SIGKILLed, connections also wait in the shared queue until they time out while the others
    # serve none for the rest of the run: io_uring's lost wakeup (experiments/reload/lost_wakeup.py: traced, the
    # wait-queue steps read from the kernel's source). While worker 0 exits, its ring's multishot accept is still
    # first among the listener's exclusive waiters; a wakeup queues its task_work to the dying task, and each
    # connection arriving then (the clients whose held connections the exit closed, reconnecting at once) wakes only
    # that owned entry, until io_uring's fallback work cancels it, unaccepted, a few ms later. Nothing wakes the live
    # rings again until a new connection arrives, and with every client waiting and a 10 s timeout none does within
    # the load. Those are timeouts, never resets, and the run counts every one of them.
    assert set(killed) <= {"no reply", "timeout"} and "no reply" in killed, killed
    if "timeout" in killed:  # seen, not failed: said in the run's summary (-ra)
        warnings.warn(f"io-uring: a killed worker's ring stalled the shared queue: {killed}", stacklevel=1)


def test_the_load_generator_cpu_line_names_each_run_once(tmp_path: Path) -> None:
    """reuseport runs once per tcp_migrate_req: the line must tell them apart (it said 'reuseport leave' twice)."""
    doc = json.loads((Path(__file__).parent / "data" / "golden" / "reload.json").read_text())
    for i, run in enumerate(doc["runs"]):
        run["client_cpu_us"] = 10.0 + i
    path = tmp_path / "cpu.json"
    path.write_text(json.dumps(doc))
    result = run_cli(["show", str(path)])
    assert result.exit_code == 0, result.output
    line = " ".join(result.stdout.split("load generator CPU per connection (µs): ")[1].split("\n\n")[0].split())
    assert line.startswith("epoll leave 10, reuseport leave migrate=0 11, reuseport leave migrate=1 12"), line


def test_one_round_of_runs_says_which_run_it_is(tmp_path: Path) -> None:
    """Without --repeat, reload still runs one run per mode, way and migrate setting (14 by default, half a
    minute): its bars say "run k of N" (stderr a terminal here; off one, the same count is the heartbeat's)."""
    import pty

    master, slave = pty.openpty()
    args = [*COMMAND, *LOAD, "--modes", "blocking", "--how", "leave,kill", "--duration", "200ms"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=slave, env={**os.environ, "COLUMNS": "100"})
    os.close(slave)
    said = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal's last copy
            break
        if not chunk:
            break
        said += chunk
    os.close(master)
    out, _ = proc.communicate(timeout=60)
    text = said.decode(errors="replace")
    if proc.returncode != 0 and "cannot make a private network namespace" in text:
        pytest.skip(text.strip())
    assert proc.returncode == 0, text
    assert "run 1 of 2" in text and "run 2 of 2" in text, text[-2000:]
    assert b"run 1 of" not in out  # progress goes to stderr only
