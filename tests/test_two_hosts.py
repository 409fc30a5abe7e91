"""The load and the server on different "hosts": two network namespaces joined by a veth pair that this
test creates (root only), with addresses from the documentation range 192.0.2.0/24, so nothing here goes
over loopback. A built-in `serve` runs in one, `run --target` and `run --attach` drive it from the other;
serve's own tally is the witness."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import OutputReader

SERVER, CLIENT = "192.0.2.1", "192.0.2.2"
PORT = 10300

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root and iproute2 to make network namespaces"
)


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


@pytest.fixture
def hosts() -> Iterator[tuple[str, str]]:
    """Two namespaces, `server` and `client`, joined by a veth pair; removed afterwards."""
    tag = uuid.uuid4().hex[:6]
    server, client = f"ao-srv-{tag}", f"ao-cli-{tag}"
    try:
        ip("netns", "add", server)
        ip("netns", "add", client)
        ip("link", "add", f"aos{tag}", "netns", server, "type", "veth", "peer", "name", f"aoc{tag}", "netns", client)
        for ns, dev, address in ((server, f"aos{tag}", SERVER), (client, f"aoc{tag}", CLIENT)):
            ip("-n", ns, "addr", "add", f"{address}/24", "dev", dev)
            ip("-n", ns, "link", "set", dev, "up")
            ip("-n", ns, "link", "set", "lo", "up")
    except subprocess.CalledProcessError as exc:
        for ns in (server, client):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)
        pytest.skip(f"cannot make network namespaces here: {exc.stderr.decode(errors='replace').strip()}")
    try:
        yield server, client
    finally:
        for ns in (server, client):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)


def accept_order(ns: str, *args: str) -> list[str]:
    return ["ip", "netns", "exec", ns, sys.executable, "-m", "accept_order", *args]


def test_a_server_on_another_host(hosts: tuple[str, str], tmp_path: Path) -> None:
    server_ns, client_ns = hosts
    serve = subprocess.Popen(
        accept_order(server_ns, "serve", "--mode", "blocking", "--host", SERVER, "--port", str(PORT)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out = OutputReader(serve.stdout)  # type: ignore[arg-type]
    err = OutputReader(serve.stderr)  # type: ignore[arg-type]
    try:
        out.wait_for(r"try: ", 20)
        pids = [int(p) for p in re.findall(r"worker \d+ pid (\d+)", out.text)]
        assert len(pids) == 3
        assert "anyone who can reach this address" in err.wait_for(r"warning: .*", 5).group(0)

        # --target: known only by its address; attributed by the replies
        target_json = tmp_path / "target.json"
        run = subprocess.run(
            accept_order(client_ns, "run", "--target", f"{SERVER}:{PORT}", "-n", "9", "--json", str(target_json)),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 0, run.stderr
        records = json.loads(target_json.read_text())["records"]
        assert [r["error"] for r in records] == [None] * 9
        assert {r["pid"] for r in records} <= set(pids)

        # --attach from the other namespace: the pids are visible, the sockets are not (another network
        # namespace), so attribution falls back to the reply, which names the worker
        attach_json = tmp_path / "attach.json"
        attach = ",".join(map(str, pids))
        cmd = ["run", "--attach", attach, "--port", str(PORT), "--host", SERVER, "-n", "6", "--json", str(attach_json)]
        run = subprocess.run(accept_order(client_ns, *cmd), capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        attached = json.loads(attach_json.read_text())["records"]
        assert [r["error"] for r in attached] == [None] * 6
        assert [r["pid"] for r in attached] == [pids[r["worker"]] for r in attached]
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(20)
    tally = out.finish()
    # serve's own witness: the workers' accept order equals what the two clients saw, in order
    match = re.search(r"Sequence: ([\d ]+)", tally)
    assert match, tally
    seen = [r["worker"] for r in records] + [r["worker"] for r in attached]
    assert [int(w) for w in match.group(1).split()] == seen
