"""Ctrl-C during a run against a server this tool did not start (--attach) stops the load, keeps what it
measured, and says the server was left alone: 0.3's line said "all workers stopped", of workers it never
touched (they are still there)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import psutil
from conftest import OutputReader, wait_for

from accept_order.probes.accepts import ATTACH_TIMEOUT_S

START_TIMEOUT_S = 15.0
# an attached run starts the kernel's accept count first, and waits for bpftrace to attach (it compiles its
# program: over 15 s at load 12-13, beside the suite): the load begins after that
SERVING_TIMEOUT_S = ATTACH_TIMEOUT_S + 30.0
STOP_TIMEOUT_S = 10.0
COMMAND = [sys.executable, "-m", "accept_order"]


def test_an_interrupted_attached_run_says_the_server_was_not_touched(free_port: int, tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "200"}
    serve = subprocess.Popen(
        [*COMMAND, "serve", "--mode", "blocking", "--workers", "2", "--port", str(free_port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    out = OutputReader(serve.stdout)  # type: ignore[arg-type]
    run = None
    try:
        out.wait_for(r"try: ", START_TIMEOUT_S)
        workers = [psutil.Process(int(p)) for p in re.findall(r"worker \d+ pid (\d+)", out.text)]
        assert len(workers) == 2, out.text
        path = tmp_path / "run.json"
        run = subprocess.Popen(
            [*COMMAND, "run", "--attach", str(serve.pid), "--port", str(free_port), "-n", "100000", "--gap", "5ms",
             "--json", str(path)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        before = sum(w.num_ctx_switches().voluntary for w in workers)
        wait_for(
            lambda: sum(w.num_ctx_switches().voluntary for w in workers),
            lambda n: n >= before + 10 or run.poll() is not None,
            SERVING_TIMEOUT_S,
            "the attached workers to serve connections",
        )
        run.send_signal(signal.SIGINT)
        stdout, stderr = run.communicate(timeout=STOP_TIMEOUT_S)
        assert run.returncode == 130, stderr
        assert (
            stderr.splitlines()[-1] == "accept-order: error: interrupted; the load stopped; the server was not touched"
        )
        assert json.loads(path.read_text())["interrupted"] is True
        assert serve.poll() is None and all(w.is_running() for w in workers)  # still there, still serving
    finally:
        if run is not None and run.poll() is None:
            run.kill()
            run.wait(STOP_TIMEOUT_S)
        serve.send_signal(signal.SIGTERM)
        serve.communicate(timeout=STOP_TIMEOUT_S)
