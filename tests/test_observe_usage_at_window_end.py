"""observe reads the workers' CPU and context switches where its window ends, not after it has settled and stopped
bpftrace: the last interval's usage was read after the load's settling and bpftrace's stop (0.5-1 s after the
freeze that ends the accepts since 45e4925: a fresh reading, the probes' detaching, the exit), and the sleeps per
data segment divide the switches by the window's segments. Here a one-process server, idle in a blocking read
through the window, sleeps 200 times (voluntary switches) while observe settles: none of them is the window's."""

from __future__ import annotations

import subprocess
import sys

import pytest

from accept_order.experiments.observe import load as load_module
from accept_order.experiments.observe.run import observe

TIMEOUT_S = 30.0
SLEEPS = 200

# listens (so observe finds it), then for each line on stdin sleeps SLEEPS times and says so
SERVER = f"""
import socket, sys, time
listening = socket.socket()
listening.bind(("127.0.0.1", 0))
listening.listen(8)
print(listening.getsockname()[1], flush=True)
for _ in sys.stdin:
    for _ in range({SLEEPS}):
        time.sleep(0.0001)
    print("slept", flush=True)
"""


def test_sleeps_after_the_window_are_not_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    settle = load_module.LoadSampler.settle

    def settling(self: load_module.LoadSampler) -> None:  # the window is over: the server sleeps now
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write("go\n")
        server.stdin.flush()
        assert server.stdout.readline() == "slept\n"
        settle(self)

    monkeypatch.setattr(load_module.LoadSampler, "settle", settling)
    try:
        assert server.stdout is not None
        server.stdout.readline()  # its port: listening
        result = observe(pid=server.pid, duration_s=0.3, interval_s=0.1, trace=False)
    finally:
        server.kill()
        server.wait(TIMEOUT_S)
    switches = sum(w.voluntary_switches or 0 for w in result.workers)
    assert switches < SLEEPS, switches
