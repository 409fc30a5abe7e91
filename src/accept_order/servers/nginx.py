"""nginx, launched by the tool: a `Target` made of a master and its workers, from a generated config.

The master runs in the foreground (`daemon off`) as our child, in a session of its own (a terminal's Ctrl-C
is ours to handle: we stop nginx in order) and dies with us (PR_SET_PDEATHSIG). Its workers are the
master's children; their pids in fork order are the worker indices. nginx's own access log (`$pid` per
request) is kept as the independent witness of who served what.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
from types import TracebackType

import psutil

from ..errors import WorkerError
from ..loads.protocol import HTTP, ClientProtocol
from ..processes import READY_TIMEOUT_S, STOP_TIMEOUT_S, die_with_parent, open_pidfd
from ..results.records import WorkerCounters
from ..spec import ServerSpec
from ..waiting import wait_for
from .nginx_config import NGINX_MODES, ServerUnavailable, nginx_binary, render_config
from .target import ReplyAttribution
from .watched import UsageDeltas, gone, proc_state

SETTLE_TIMEOUT_S = 2.0


def _free_port(host: str) -> int:
    """A port the kernel just picked for us (nginx cannot be told to pick one and say which)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class NginxServer:
    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self.mode = NGINX_MODES[spec.mode]
        self.directory = ""
        self.port = spec.port
        self.master: subprocess.Popen[bytes] | None = None
        self._pids: list[int] = []
        self._pidfds: list[int] = []
        self._usage: UsageDeltas | None = None
        self._unsettled = 0
        self._log: list[tuple[int, int]] = []  # (pid, client port) per request, from nginx's access log

    # -- the Target interface -------------------------------------------------------------------
    @property
    def address(self) -> tuple[str, int]:
        return (self.spec.host, self.port)

    @property
    def pids(self) -> list[int]:
        return self._pids

    @property
    def attribution(self) -> ReplyAttribution:
        return ReplyAttribution(tuple(self._pids))  # nginx answers "worker PID"

    @property
    def protocol(self) -> ClientProtocol:
        return HTTP

    @property
    def unsettled(self) -> int:
        return self._unsettled

    def death_fds(self) -> list[int]:
        return list(self._pidfds)

    def __enter__(self) -> NginxServer:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- start ----------------------------------------------------------------------------------
    def start(self) -> None:
        spec = self.spec
        binary = nginx_binary()
        self.directory = tempfile.mkdtemp(prefix="accept-order-nginx-")
        self.port = spec.port or _free_port(spec.host)
        conf = os.path.join(self.directory, "nginx.conf")
        with open(conf, "w") as f:
            f.write(
                render_config(
                    self.directory,
                    self.mode,
                    host=spec.host,
                    port=self.port,
                    workers=spec.workers,
                    backlog=spec.backlog,
                    multi_accept=spec.accept_batch == 0,
                    cpus=spec.cpus,
                    work_us=spec.work_us,
                    work_iters=spec.work_iters,
                    mutex_delay_ms=spec.mutex_delay_ms,
                )
            )
        error_log = os.path.join(self.directory, "error.log")
        with open(os.path.join(self.directory, "stderr.log"), "wb") as stderr:
            self.master = subprocess.Popen(
                [binary, "-e", error_log, "-p", self.directory, "-c", conf],
                stdin=subprocess.DEVNULL,
                stdout=stderr,
                stderr=stderr,
                start_new_session=True,  # the terminal's Ctrl-C is ours: we stop nginx in order
                preexec_fn=die_with_parent,
            )
        master = psutil.Process(self.master.pid)
        ready = wait_for(lambda: self._ready(master), 2 * READY_TIMEOUT_S, interval_s=0.005)
        if self.master.poll() is not None:
            raise ServerUnavailable(f"nginx exited with status {self.master.returncode}: {self._last_error()}")
        if not ready:
            raise WorkerError(f"nginx's {spec.workers} workers were not ready within {2 * READY_TIMEOUT_S:g} s")
        self._pids = [p.pid for p in sorted(master.children(), key=lambda p: (p.create_time(), p.pid))]
        self._pidfds = [fd for fd in map(open_pidfd, self._pids) if fd is not None]
        self._usage = UsageDeltas(self._pids)

    def _ready(self, master: psutil.Process) -> bool:
        """Every worker exists and sleeps (in epoll_wait), and the port accepts."""
        if self.master is None or self.master.poll() is not None:
            return True  # start() reports the exit
        try:
            workers = master.children()
        except psutil.Error:
            return True
        if len(workers) != self.spec.workers or not all(proc_state(w.pid) == "S" for w in workers):
            return False
        return os.path.exists(os.path.join(self.directory, "nginx.pid"))

    def _last_error(self) -> str:
        for name in ("error.log", "stderr.log"):
            try:
                with open(os.path.join(self.directory, name), errors="replace") as f:
                    lines = [line.strip() for line in f if "[emerg]" in line or "[alert]" in line]
                if lines:  # the first names the cause; later ones ("still could not bind()") only follow from it
                    return lines[0][:300]
            except OSError:
                pass
        return "no message"

    # -- while running --------------------------------------------------------------------------
    def check_alive(self) -> None:
        if self.master is not None and self.master.poll() is not None:
            raise WorkerError(f"nginx's master (pid {self.master.pid}) exited with status {self.master.returncode}")
        for index, pid in enumerate(self._pids):
            if gone(pid):
                raise WorkerError(f"nginx worker {index} (pid {pid}) died", index)

    def settle(self) -> None:
        """Before a sequential connection: every worker asleep (in epoll_wait, or the accept mutex's wait)."""
        if not wait_for(lambda: all(proc_state(pid) == "S" for pid in self._pids), SETTLE_TIMEOUT_S):
            self._unsettled += 1

    # -- stop -----------------------------------------------------------------------------------
    def stop(self) -> list[WorkerCounters]:
        """The workers' usage deltas; then a graceful stop (SIGQUIT) and nginx's access log read."""
        counters = self._usage.counters() if self._usage is not None else []
        self.close()
        return counters

    def check_stopped(self) -> None:
        """nginx's workers are not ours to report deaths after the run: check_alive covered the run."""

    def access_log(self) -> list[tuple[int, int]]:
        """(worker pid, client port) per request, in nginx's own order: the witness a run is checked against."""
        return list(self._log)

    def witness(self) -> dict[str, object]:
        """What the server itself says it served (after stop): nginx's access log, `$pid $remote_port`."""
        return {"source": "nginx access log", "requests": [[pid, port] for pid, port in self._log]}

    def _read_log(self) -> None:
        try:
            with open(os.path.join(self.directory, "access.log")) as f:
                self._log = [(int(p), int(port)) for p, port, *_ in (line.split() for line in f) if p.isdigit()]
        except (OSError, ValueError):
            self._log = []

    def close(self) -> None:
        """Stop nginx gracefully (SIGQUIT), then SIGTERM, then SIGKILL master and workers; remove the directory."""
        master = self.master
        if master is not None and master.poll() is None:
            for sig, wait_s in ((signal.SIGQUIT, STOP_TIMEOUT_S), (signal.SIGTERM, 1.0), (signal.SIGKILL, 1.0)):
                try:
                    master.send_signal(sig)
                    master.wait(wait_s)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if master is not None and master.poll() is None:
            master.kill()
            master.wait()
        for pid in self._pids:  # a worker orphaned by a killed master must not keep the port
            if not gone(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        wait_for(lambda: all(gone(pid) for pid in self._pids), STOP_TIMEOUT_S)
        for fd in self._pidfds:
            os.close(fd)
        self._pidfds = []
        if self.directory and os.path.isdir(self.directory):
            self._read_log()
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = ""
        self.master = None
