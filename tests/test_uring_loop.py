"""The io_uring load generator (loads/uring_loop.py) against the epoll loop on the same events.

Counts are exact and compared; timings are never asserted. Most tests run a loop in this process (the
driver's own function, with small stand-ins for the shared progress array and stop flag) against a tiny
server thread, so that what the loop leaves open is this process's own descriptors (/proc/self/fd).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_one_error_line, needs_ipv6, run_cli

from accept_order.core.errors import PlanError
from accept_order.core.finished import PUBLISHED
from accept_order.core.processes import MAX_REPLY
from accept_order.core.protocol import ABORTED, BAD_REPLY, NO_REPLY, TIMEOUT, ClientProtocol, HttpProtocol
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.loads import drivers
from accept_order.loads.drive_loop import DriverConfig, _drive
from accept_order.loads.generator import run_load
from accept_order.loads.uring_loop import _shut, drive_uring
from accept_order.servers.pool import WorkerPool

URING = pytest.mark.skipif(drivers.uring_unavailable() is not None, reason=f"{drivers.uring_unavailable()}")
LOOPS = ["io_uring", "epoll"]
LINE = ClientProtocol("line", b"")
TICK_S = 0.02  # the io_uring loop's tick here: timeouts and the stop flag are seen within it
HANG_S = 20.0  # a loop still running after this long hangs
IO_URING_ENTER = "426"  # the system call's number (/proc/PID/task/TID/syscall), the same on every architecture


class AnyReply:
    """Attribution that takes any non-empty reply as worker 0's: the loops' own checks are what is tested."""

    holds_socket = False

    def from_reply(self, reply: bytes) -> int | None:
        return 0 if reply else None

    def from_socket(self, local: tuple[str, int], peer: tuple[str, int]) -> int | None:
        return None


class Flag:
    """The shared stop flag's stand-in: `value` reads `raised()` (by default never)."""

    def __init__(self, raised: Callable[[], bool] = lambda: False) -> None:
        self.raised = raised

    @property
    def value(self) -> int:
        return int(self.raised())


def bounded(run: Callable[[], dict[str, Any]], in_thread: bool) -> dict[str, Any]:
    """run() in a thread, failing the test if it has not returned in HANG_S (a loop that hangs would hang
    the suite: there is no pytest timeout); in this thread when `in_thread` is False (signals land here)."""
    if not in_thread:
        return run()
    outcome: list[Any] = []

    def target() -> None:
        try:
            outcome.append(run())
        except BaseException as exc:  # raised again in the test's thread
            outcome.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(HANG_S)
    if thread.is_alive():
        pytest.fail(f"the loop had not returned after {HANG_S} s")
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    result: dict[str, Any] = outcome[0]
    return result


def drive(
    loop: str,
    address: tuple[str, int],
    stop: Flag | None = None,
    in_thread: bool = True,
    tick_s: float = TICK_S,
    **options: Any,
) -> dict[str, Any]:
    """One driver's run in this process: `loop`'s function on a DriverConfig from `options`; io_uring's at a tick
    of `tick_s`."""
    settings: dict[str, Any] = {"requests": 20, "duration_s": None, "slots": 4, "timeout_s": 5.0, **options}
    protocol = settings.pop("protocol", LINE)
    cfg = DriverConfig(0, address, AnyReply(), protocol, loop=loop, **settings)
    progress = [0] * PUBLISHED
    flag = stop or Flag()
    if loop == "io_uring":
        result = bounded(lambda: drive_uring(cfg, progress, flag, tick_s), in_thread)
    else:
        result = bounded(lambda: _drive(cfg, progress, flag), in_thread)
    stats = result["stats"]
    assert stats["loop"] == loop
    # every finished connection is served or failed, and the progress published says no more
    served = sum(result["served"].values())
    assert served + sum(result["errors"].values()) == stats["requests"]
    assert progress[0] <= stats["requests"] and progress[1] == served
    assert sum(n for _, n in result["counts"]) == served  # one sample per served connection
    return result


def open_fds() -> dict[int, str]:
    """This process's descriptors and what each is (a socket's inode tells one socket from the next)."""
    fds: dict[int, str] = {}
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # the directory's own descriptor, gone by now
            fds[int(name)] = os.readlink(f"/proc/self/fd/{name}")
    return fds


@contextlib.contextmanager
def no_descriptor_left() -> Iterator[None]:
    """The block leaves this process's descriptors as it found them (no socket of the loop's left open)."""
    before = open_fds()
    yield
    after = open_fds()
    assert {fd: what for fd, what in after.items() if before.get(fd) != what} == {}


class Server:
    """A listener in a thread that runs `handle` on each connection it accepts and then closes it; a handle
    that returns True keeps the connection open (until the server closes). None: never accept (the
    kernel still completes the handshake)."""

    def __init__(self, handle: Callable[[socket.socket], bool | None] | None, host: str = "127.0.0.1") -> None:
        self.listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self.listener.bind((host, 0))
        self.listener.listen(256)
        self.address: tuple[str, int] = self.listener.getsockname()[:2]
        self.handle = handle
        self.held: list[socket.socket] = []
        self.accepted = 0
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        if handle is not None:
            self.thread.start()

    def _serve(self) -> None:
        assert self.handle is not None
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # shut down: the test is over
                return
            keep = False
            try:
                keep = bool(self.handle(conn))
            except OSError:
                pass
            with self.lock:
                self.accepted += 1
                if keep:
                    self.held.append(conn)
            if not keep:
                conn.close()

    def has_accepted(self, count: int) -> bool:
        with self.lock:
            return self.accepted >= count

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept()
        if self.thread.is_alive():
            self.thread.join(5)
        self.listener.close()
        for conn in self.held:
            conn.close()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def replying(data: bytes) -> Callable[[socket.socket], None]:
    return lambda conn: conn.sendall(data)


def holding(conn: socket.socket) -> bool:
    return True


def reset(conn: socket.socket) -> None:
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close sends RST


@contextlib.contextmanager
def refusing() -> Iterator[tuple[str, int]]:
    """An address bound but not listening: every connect to it is refused."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    try:
        yield sock.getsockname()
    finally:
        sock.close()


# -- the same events, the same counts, under both loops -------------------------------------------------


@URING
@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize("protocol", [LINE, HttpProtocol()], ids=["line", "http"])
def test_refused_connections_are_all_econnrefused(loop: str, protocol: ClientProtocol) -> None:
    with no_descriptor_left(), refusing() as address:
        result = drive(loop, address, protocol=protocol, requests=30, slots=6)
    assert result["errors"] == {"ECONNREFUSED": 30}


@URING
@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize(
    ("handle", "served", "errors"),
    [
        (replying(b"worker 0 pid 1\n"), 24, {}),
        (lambda conn: None, 0, {NO_REPLY: 24}),
        (reset, 0, {"ECONNRESET": 24}),
        (replying(b"x" * MAX_REPLY), 24, {}),  # exactly the most a reply may be
        (replying(b"x" * (2 * MAX_REPLY)), 0, {BAD_REPLY: 24}),
    ],
    ids=["served", "empty", "reset", "exactly-max", "twice-max"],
)
def test_replies_are_served_or_failed_alike(
    loop: str, handle: Callable[[socket.socket], None], served: int, errors: dict[str, int]
) -> None:
    with no_descriptor_left(), Server(handle) as server:
        result = drive(loop, server.address, requests=24, slots=6)
    assert (sum(result["served"].values()), result["errors"]) == (served, errors)


@URING
@needs_ipv6
@pytest.mark.parametrize("loop", LOOPS)
def test_ipv6(loop: str) -> None:
    with no_descriptor_left(), Server(replying(b"worker 0 pid 1\n"), "::1") as server:
        result = drive(loop, server.address, requests=12, slots=3)
    assert (result["served"], result["errors"]) == ({0: 12}, {})


@URING
@pytest.mark.parametrize("loop", LOOPS)
def test_one_byte_over_the_most_a_reply_may_be_is_a_bad_reply(loop: str) -> None:
    # io_uring: the receives fill the MAX_REPLY buffer; one more byte asked for tells this reply from one of
    # exactly MAX_REPLY. epoll: served when the last byte came with the FIN (2 of 20 connections), once
    with no_descriptor_left(), Server(replying(b"x" * (MAX_REPLY + 1))) as server:
        result = drive(loop, server.address, requests=24, slots=6)
    assert (result["served"], result["errors"]) == ({}, {BAD_REPLY: 24})


@URING
@pytest.mark.parametrize("loop", LOOPS)
def test_a_server_that_never_answers_times_out_and_the_run_ends(loop: str) -> None:
    with no_descriptor_left(), Server(holding) as server:
        result = drive(loop, server.address, requests=6, slots=3, timeout_s=0.1)
    assert result["errors"] == {TIMEOUT: 6}


@URING
def test_connections_nobody_accepts_time_out_too() -> None:
    # The kernel completes the handshake and queues them; nobody accepts, so the receive waits for nothing.
    with no_descriptor_left(), Server(None) as server:
        result = drive("io_uring", server.address, requests=4, slots=4, timeout_s=0.1)
    assert result["errors"] == {TIMEOUT: 4}


@URING
@pytest.mark.parametrize("loop", LOOPS)
def test_the_request_arrives_before_the_reply(loop: str) -> None:
    http = HttpProtocol()
    seen: list[bytes] = []

    def answer(conn: socket.socket) -> None:
        request = b""
        while not request.endswith(b"\r\n\r\n"):
            chunk = conn.recv(4096)
            if not chunk:
                return  # no request: no answer (counted as no reply)
            request += chunk
        seen.append(request)
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nworker 0 pid 1\n")

    with no_descriptor_left(), Server(answer) as server:
        result = drive(loop, server.address, protocol=http, requests=20, slots=5)
    assert (result["served"], result["errors"]) == ({0: 20}, {})
    assert seen == [http.request] * 20


@URING
@pytest.mark.parametrize("loop", LOOPS)
@pytest.mark.parametrize(
    "handle",
    [
        lambda conn: conn.sendall(b"worker 0 pid 1\n") or reset(conn),
        lambda conn: conn.sendall(b"worker 0 p") or reset(conn),
    ],
    ids=["whole-reply", "part-of-it"],
)
def test_a_reset_after_a_reply_is_econnreset(loop: str, handle: Callable[[socket.socket], None]) -> None:
    # io_uring: a receive with MSG_WAITALL would hand back the bytes that came before the reset and the kernel
    # drop the error (served, or a bad reply); receives to the EOF see it, as the epoll loop does
    with no_descriptor_left(), Server(handle) as server:
        result = drive(loop, server.address, requests=24, slots=6)
    assert result["errors"] == {"ECONNRESET": 24}


@URING
@pytest.mark.parametrize("loop", LOOPS)
def test_connections_due_while_every_slot_is_busy_are_late(loop: str) -> None:
    # Open loop, 1000/s over 2 slots, a server that never answers: the first two start when due, the next two
    # are due 2 and 3 ms in, while both slots wait for their timeout (0.1 s): late.
    with no_descriptor_left(), Server(holding) as server:
        result = drive(loop, server.address, requests=4, slots=2, rate=1000.0, timeout_s=0.1)
    assert (result["errors"], result["stats"]["late"]) == ({TIMEOUT: 4}, 2)


@URING
@pytest.mark.parametrize("loop", LOOPS)
def test_an_open_loop_with_room_to_spare_is_never_late(loop: str) -> None:
    with no_descriptor_left(), Server(replying(b"worker 0 pid 1\n")) as server:
        result = drive(loop, server.address, requests=40, slots=40, rate=2000.0)
    assert (result["served"], result["stats"]["late"]) == ({0: 40}, 0)


# -- the stop flag ---------------------------------------------------------------------------------------


@URING
@pytest.mark.parametrize("loop", LOOPS)
def test_a_stop_counts_what_was_in_flight_as_aborted_and_closes_it(loop: str) -> None:
    # The first 5 connections are answered, the next ones held open: the stop comes once 4 are held.
    def answer_then_hold(conn: socket.socket) -> bool:
        if server.accepted < 5:
            conn.sendall(b"worker 0 pid 1\n")
            return False
        return True

    with no_descriptor_left(), Server(answer_then_hold) as server:
        result = drive(loop, server.address, Flag(lambda: server.has_accepted(9)), requests=100, slots=4)
    assert (result["served"], result["errors"]) == ({0: 5}, {ABORTED: 4})


# Signals this process when its thread TID waits in io_uring_enter (another process: the binding may hold the GIL
# while it waits, so no thread of this one can see the wait).
SIGNAL_IN_THE_WAIT = """
import os, signal, sys, time
pid, tid = int(sys.argv[1]), int(sys.argv[2])
deadline = time.monotonic() + 10
while open(f"/proc/{pid}/task/{tid}/syscall").read().split()[0] != sys.argv[3]:
    if time.monotonic() > deadline:
        sys.exit("the loop was never seen waiting in io_uring_enter")
    time.sleep(0.001)
os.kill(pid, signal.SIGUSR1)  # to the process: its main thread, the one blocked in the wait, takes it
"""


@URING
def test_a_signal_while_waiting_is_not_an_error() -> None:
    # driver_main's SIGTERM handler sets the stop flag while the loop waits for completions: the wait is
    # interrupted (EINTR) and the loop must go on to see the flag, as the epoll loop's poll does (PEP 475).
    assert threading.current_thread() is threading.main_thread()  # signal handlers run here
    stopped = threading.Event()
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: stopped.set())
    argv = [sys.executable, "-c", SIGNAL_IN_THE_WAIT, str(os.getpid()), str(threading.get_native_id()), IO_URING_ENTER]
    watchers: list[subprocess.Popen[bytes]] = []

    def hold_and_signal(conn: socket.socket) -> bool:
        if server.accepted == 3:  # the fourth: every slot is in flight, and the signal lands in the wait
            watchers.append(subprocess.Popen(argv))
        return True

    try:
        with no_descriptor_left(), Server(hold_and_signal) as server:
            result = drive("io_uring", server.address, Flag(stopped.is_set), False, requests=10, slots=4)
    finally:
        signal.signal(signal.SIGUSR1, previous)
        for watcher in watchers:
            # it signals and then exits: the drive can end between the two (a busy CI machine killed a watcher
            # that had done its work), so it is given time to end before it is killed
            try:
                watcher.wait(timeout=30)
            except subprocess.TimeoutExpired:
                watcher.kill()
                watcher.wait()
    assert [w.returncode for w in watchers] == [0]
    assert result["errors"] == {ABORTED: 4}


@URING
def test_sockets_made_but_not_reaped_are_closed_with_the_ring() -> None:
    # A stop can come while sockets are on order: the kernel made them at once, their completions unread.
    uring = drivers.binding()
    with no_descriptor_left():
        ring = uring.Ring(entries=8)
        for _ in range(3):
            ring.prepare_socket(socket.AF_INET, socket.SOCK_STREAM, 0, 0, None)
        ring.submit()
        _shut(ring, 3, [])


# -- too few descriptors -----------------------------------------------------------------------------------

# The loop in a child with a low open-file limit (the server stays here, under the usual one).
CHILD = """
import json, os, resource, sys
from accept_order.core.protocol import ClientProtocol
from accept_order.loads.drive_loop import DriverConfig, _drive
from accept_order.loads.uring_loop import drive_uring
loop, port, requests, slots, spare = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])

class AnyReply:
    holds_socket = False
    def from_reply(self, reply): return 0 if reply else None
    def from_socket(self, local, peer): return None

class Never:
    value = 0

# the descriptors open now, the loop's own (a ring or an epoll) and `slots`, plus `spare`
limit = len(os.listdir("/proc/self/fd")) - 1 + 1 + slots + spare
resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
line = ClientProtocol("line", b"")
cfg = DriverConfig(0, ("127.0.0.1", port), AnyReply(), line, requests, None, slots, 5.0, loop=loop)
if loop == "io_uring":
    result = drive_uring(cfg, [0, 0, 0], Never(), 0.02)  # finished, served, timed out
else:
    result = _drive(cfg, [0, 0, 0], Never())
served = sum(result["served"].values())
print(json.dumps({"served": served, "errors": result["errors"], "done": result["stats"]["requests"]}))
"""


def limited(loop: str, address: tuple[str, int], requests: int, slots: int, spare: int) -> dict[str, Any]:
    """The loop's run in a child whose open-file limit leaves `spare` descriptors beyond its slots'."""
    argv = [sys.executable, "-c", CHILD, loop, str(address[1]), str(requests), str(slots), str(spare)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    outcome: dict[str, Any] = json.loads(proc.stdout)
    assert outcome["served"] + sum(outcome["errors"].values()) == outcome["done"] == requests
    return outcome


@URING
@pytest.mark.parametrize("loop", LOOPS)
def test_too_few_descriptors_are_counted_as_emfile_and_the_run_ends(loop: str) -> None:
    with Server(replying(b"worker 0 pid 1\n")) as server:
        outcome = limited(loop, server.address, requests=200, slots=20, spare=-12)
    assert set(outcome["errors"]) == {"EMFILE"}
    assert outcome["served"] > 0


@URING
@pytest.mark.parametrize("loop", LOOPS)
def test_enough_descriptors_for_the_slots_are_enough(loop: str) -> None:
    # The io_uring loop keeps sockets on order beyond its slots (SPARE): one the kernel refuses for want of a
    # descriptor is not a failed connection while every slot has its own, nor one refused before the close
    # of a connection that ended since (the close goes to the kernel with the next sockets asked for).
    with Server(replying(b"worker 0 pid 1\n")) as server:
        outcome = limited(loop, server.address, requests=3000, slots=30, spare=0)
    assert (outcome["served"], outcome["errors"]) == (3000, {})


# -- against the built-in workers --------------------------------------------------------------------------


@pytest.fixture
def pool() -> Iterator[WorkerPool]:
    with WorkerPool(ServerSpec(mode="epoll", workers=2).validated()) as p:
        yield p


@URING
@pytest.mark.parametrize(
    "shape",
    [{"connections": 400}, {"connections": 200, "rate": 4000.0}, {"connections": None, "duration_s": 0.2}],
    ids=["closed", "open", "duration"],
)
def test_served_by_each_worker_is_what_each_worker_counted(pool: WorkerPool, shape: dict[str, Any]) -> None:
    load = ConcurrentLoad(concurrency=8, driver_procs=2, driver="io_uring", **shape)
    result = run_load(pool.address, pool.attribution, load)
    accepted = Counter({c.index: c.accepts for c in pool.stop() if c.accepts})
    assert [d.loop for d in result.drivers] == ["io_uring", "io_uring"]
    assert result.failed == 0 and result.served == accepted
    assert result.histogram.count == result.ok == sum(d.requests for d in result.drivers)
    if shape.get("connections"):
        assert result.ok == shape["connections"]
    assert all((d.late is None) == (load.rate is None) for d in result.drivers)


# -- which loop runs ------------------------------------------------------------------------------------


def test_without_the_binding_auto_is_epoll_and_io_uring_says_why(no_uring: None) -> None:
    assert drivers.resolve("auto") == "epoll"
    assert drivers.resolve("epoll") == "epoll"
    with pytest.raises(PlanError, match=r"--driver io_uring: needs the io_uring binding: pip install"):
        drivers.resolve("io_uring")


def test_kept_connections_run_on_epoll() -> None:
    assert drivers.resolve("auto", kept=True) == "epoll"
    with pytest.raises(PlanError, match="kept connections run on epoll"):
        drivers.resolve("io_uring", kept=True)


SMALL = ["latency", "-w", "1", "-n", "20", "-c", "2", "--driver-procs", "1"]


def test_the_report_says_the_drivers_ran_on_epoll(no_uring: None) -> None:
    result = run_cli(SMALL)
    assert result.exit_code == 0, result.output
    assert "drivers on epoll (" in result.stdout


def test_io_uring_where_it_cannot_run_is_one_line(no_uring: None) -> None:
    assert_one_error_line(run_cli([*SMALL, "--driver", "io_uring"]), 2, "--driver io_uring", "binding")


def test_io_uring_with_kept_connections_is_one_line() -> None:
    result = run_cli([*SMALL, "--driver", "io_uring", "--requests-per-connection", "5"])
    assert_one_error_line(result, 2, "--driver io_uring", "kept connections")


@pytest.mark.parametrize(
    "args",
    [SMALL, ["sweep", "-w", "1", "-n", "20", "--accept-batch", "1,4"], ["burst", "-w", "1", "--clients", "5"]]
    + [["ramp", "-w", "1", "--rates", "50", "--step", "200ms"]],
    ids=["latency", "sweep", "burst", "ramp"],
)
def test_io_uring_where_it_cannot_run_is_refused_before_any_server_starts(
    no_uring: None, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    """The load generator would refuse it too, but only once the server is up (an nginx started for nothing)."""
    from accept_order.experiments import lifecycle, session
    from accept_order.experiments.latency import api as latency_api
    from accept_order.experiments.order import api as order_api
    from accept_order.servers import registry

    def planned(*a: Any, **k: Any) -> Any:
        raise AssertionError("a server was planned before --driver io_uring was refused")

    # every name a server is planned through, also where a module bound it at import (a module first imported
    # under this patch would keep the fake for the rest of the process: later tests' loads all failed)
    for module, name in [(registry, "plan"), (registry, "variants"), (session, "plan"), (lifecycle, "plan")]:
        monkeypatch.setattr(module, name, planned)
    monkeypatch.setattr(latency_api, "variants", planned)
    monkeypatch.setattr(order_api, "variants", planned)
    assert_one_error_line(run_cli([*args, "--driver", "io_uring"]), 2, "--driver io_uring", "binding")


@URING
@pytest.mark.parametrize("loop", LOOPS)
def test_every_report_of_a_load_says_which_loop_ran(loop: str, tmp_path: Path) -> None:
    """latency's drivers line, a table's CPU line, a burst's cell and a ramp's step (kept in its file too)."""
    latency = run_cli([*SMALL, "--driver", loop])
    assert f"drivers on {loop} (" in latency.stdout, latency.output
    table = run_cli(["latency", "-w", "1", "-n", "20", "-c", "2", "--modes", "epoll,reuseport", "--driver", loop])
    assert f"load generator CPU per connection (µs, on {loop}): " in table.stdout, table.output
    burst = run_cli(["burst", "-w", "1", "--clients", "5", "--driver", loop])
    assert f"load generator on {loop} " in burst.stdout, burst.output
    out = tmp_path / "ramp.json"
    steps = ["--rates", "50", "--step", "200ms"]  # an open loop: a closed one took every CPU for the step
    ramp = run_cli(["ramp", "-w", "1", *steps, "--driver", loop, "--json", str(out)])
    assert f"load generator on {loop}: " in ramp.stdout, ramp.output
    assert [s["loop"] for s in json.loads(out.read_text())["steps"]] == [loop]
    kept = tmp_path / "reload.json"
    reload = run_cli(
        ["reload", "-w", "2", "--modes", "epoll", "--duration", "300ms", "--driver", loop, "--json", f"{kept}"]
    )
    assert f"load generator CPU per connection (µs, on {loop}): " in reload.stdout, reload.output
    assert {r["loop"] for r in json.loads(kept.read_text())["runs"]} == {loop}


def test_a_binding_without_its_compiled_part_is_said_so(monkeypatch: pytest.MonkeyPatch) -> None:
    """uring-api's probe() then returns {}: not io_uring_disabled or seccomp, but the install, is to blame."""
    import types

    broken = types.SimpleNamespace(_native_import_error=ImportError("libfoo.so: cannot open"), probe=lambda: {})
    drivers.uring_unavailable.cache_clear()
    monkeypatch.setattr(drivers, "binding", lambda: broken)
    try:
        assert "compiled part did not load (libfoo.so: cannot open)" in (drivers.uring_unavailable() or "")
    finally:
        drivers.uring_unavailable.cache_clear()
