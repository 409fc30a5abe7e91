"""The queueing model took lighttpd's workers to accept one connection a wakeup (ModeInfo.own_batch left at 1 by
57afc5d), where lighttpd accepts up to 100 per readiness event of its listener (network.c: 'accept()s at most 100
new connections per fdevent'): bpftrace saw 250 queued connections taken in wakeups of 100, 100 and 50, in both
modes. The model now takes lighttpd's 100.

The witness is the kernel: bpftrace's count of accepts between a worker's waits, with Debian's lighttpd launched as
the tool launches it, its workers stopped while the connections queue, then let go."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess

import pytest
from conftest import OutputReader
from test_h4_uvicorn_accepts_per_wakeup import BPFTRACE

from accept_order.analysis.model_check import discipline_of
from accept_order.core.spec import ServerSpec
from accept_order.probes.accepts import ATTACH_TIMEOUT_S, ensure_tracefs
from accept_order.probes.bpftrace_messages import ATTACHED_ENV
from accept_order.servers.launched.lighttpd import LIGHTTPD_MODES, LighttpdServer, lighttpd_missing
from accept_order.servers.registry import checked

QUEUED = 250  # more than two workers' first wakeups can take at 100 each: each of those takes its whole batch


def program(workers: list[int]) -> str:
    """Per wakeup (a wait entered again), how many accepts a worker got."""
    pred = " || ".join(f"pid == {w}" for w in workers)
    waits = ",".join(f"tracepoint:syscalls:sys_enter_{call}" for call in ("epoll_wait", "epoll_pwait", "poll", "ppoll"))
    return (
        f"tracepoint:syscalls:sys_exit_accept4, tracepoint:syscalls:sys_exit_accept /{pred}/"
        " { if (args->ret >= 0) { @run[tid]++; } }\n"
        f"{waits} /{pred}/ {{ if (@run[tid] > 0) {{ @runs[@run[tid]] = count(); }} @run[tid] = 0; }}\n"
        'END { clear(@run); printf("done\\n"); }\n'
    )


@pytest.mark.parametrize("mode", sorted(LIGHTTPD_MODES))
def test_the_model_takes_lighttpds_own_batch(mode: str) -> None:
    spec = ServerSpec(kind="lighttpd", mode=mode, workers=2)
    assert discipline_of(LIGHTTPD_MODES[mode], spec) == ("shared", 100)


@pytest.mark.skipif(lighttpd_missing() is not None, reason=str(lighttpd_missing()))
@pytest.mark.skipif(os.geteuid() != 0 or BPFTRACE is None, reason="needs root and bpftrace")
@pytest.mark.parametrize("mode", sorted(LIGHTTPD_MODES))
def test_lighttpds_own_batch_is_what_the_kernel_counts(mode: str) -> None:
    assert BPFTRACE is not None and ensure_tracefs()[0]
    tracer: subprocess.Popen[str] | None = None
    with LighttpdServer(checked(ServerSpec(kind="lighttpd", mode=mode, workers=2, backlog=1024))) as server:
        host, port = server.address
        workers = list(server.pids)
        try:
            for w in workers:
                os.kill(w, signal.SIGSTOP)
            clients = [socket.create_connection((host, port), timeout=30) for _ in range(QUEUED)]
            argv = [BPFTRACE, "-B", "line", "-e", program(workers)]
            env = {**os.environ, ATTACHED_ENV: "1"}
            tracer = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
            assert tracer.stdout is not None
            reader = OutputReader(tracer.stdout)
            reader.wait_for(re.escape(ATTACHED_ENV), ATTACH_TIMEOUT_S)
            for w in workers:
                os.kill(w, signal.SIGCONT)
            for c in clients:
                c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                assert c.recv(100).startswith(b"HTTP/1."), mode
                c.close()
            tracer.send_signal(signal.SIGINT)
            tracer.wait(ATTACH_TIMEOUT_S)
            out = reader.finish()
        finally:
            if tracer is not None and tracer.poll() is None:
                tracer.kill()
                tracer.wait()
            for w in workers:
                try:
                    os.kill(w, signal.SIGCONT)
                except ProcessLookupError:
                    pass
    runs = {int(k): int(v) for k, v in re.findall(r"^@runs\[(\d+)\]: (\d+)$", out, re.MULTILINE)}
    assert sum(k * v for k, v in runs.items()) == QUEUED, out
    assert max(runs) == LIGHTTPD_MODES[mode].own_batch, out  # the first wakeups take a whole batch, none more
