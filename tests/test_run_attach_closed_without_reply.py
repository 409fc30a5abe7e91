"""`run --attach` of a line server that accepts each connection and closes it without a word served nothing, as
`latency --attach` says of the same server ('no reply', exit 1): with the kernel's accepts read (bpftrace), the
sequential client attributed each empty close to the worker the kernel saw accept it and counted it served
('served 5, failed 0', 'Verdict: single worker', exit 0), where latency read '20 × no reply' and exited 1. The
witness is the server's own log of each connection it accepted (and closed unanswered)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import run_cli
from waiting import wait_for

START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
CONNECTIONS = 5

# One process: it listens, says 'ready', then logs each accepted connection's client port and closes it unanswered.
CLOSER = r"""
import os, socket, sys
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(128)
log = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
print(listener.getsockname()[1], flush=True)
while True:
    conn, peer = listener.accept()
    os.write(log, f"{peer[1]}\n".encode())
    conn.close()
"""


def test_run_attach_of_a_server_closing_unanswered_served_nothing(tmp_path: Path) -> None:
    witness, out = tmp_path / "accepted.log", tmp_path / "run.json"
    server = subprocess.Popen([sys.executable, "-c", CLOSER, str(witness)], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        port = server.stdout.readline().strip()  # the listener is up before the port is said
        attach = ["--attach", str(server.pid), "--port", port]
        result = run_cli(["run", *attach, "-n", str(CONNECTIONS), "--json", str(out)])
        accepted = wait_for(lambda: witness.read_text().split(), lambda a: len(a) >= CONNECTIONS, 5.0, "the log")
    finally:
        server.kill()
        server.wait(STOP_TIMEOUT_S)
    assert len(accepted) == CONNECTIONS, accepted  # the witness: the server took every connection, closed each
    doc = json.loads(out.read_text())  # saved before the error line
    assert [r["error"] for r in doc["records"]] == ["closed without a reply"] * CONNECTIONS, doc["records"]
    assert f"served 0, failed {CONNECTIONS}" in result.stdout, result.stdout
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[-1].startswith(f"accept-order: error: served nothing: {CONNECTIONS} × no reply")
