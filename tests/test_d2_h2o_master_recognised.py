"""h2o started as Debian's unit starts it (`h2o -c CONF -m master`) is recognised by inspect as observe recognises it.

In master mode h2o runs Server::Starter, a perl script, as its master: `perl -x /usr/share/h2o/start_server
--pid-file=... --port=... -- /usr/bin/h2o -c CONF`, which holds the listener and starts h2o. The registry read the
first three arguments only (`perl -x /usr/share/h2o/start_server`): inspect said "perl ... is not a server this tool
knows" while observe, naming the worker's program, said "h2o". A wrapper's command after `--` is its server now.
Witness: the master's own command line in /proc.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import gone, run_cli, wait_for
from h2o_config import h2o_config

from accept_order.experiments.observe.observer import recognised_kind
from accept_order.experiments.observe.server import find_server
from accept_order.probes.proc_processes import children_of

H2O = shutil.which("h2o")
TIMEOUT_S = 20.0

pytestmark = pytest.mark.skipif(H2O is None, reason="h2o is not installed")


def argv(pid: int) -> list[str]:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return [a.decode() for a in f.read().split(b"\0") if a]


@pytest.fixture
def h2o_master(tmp_path: Path, free_port: int) -> Iterator[tuple[int, int]]:
    """h2o as Debian's unit starts it: its master (Server::Starter's perl) and port, once its h2o listens."""
    assert H2O is not None
    config = tmp_path / "h2o.conf"
    config.write_text(h2o_config(tmp_path, free_port, 2, www=tmp_path, pid_file=True))
    master = subprocess.Popen(
        [H2O, "-c", str(config), "-m", "master"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    workers: set[int] = set()
    try:

        def serving() -> tuple[int | None, bool]:
            workers.update(child for child in children_of([master.pid]) if "h2o" in " ".join(argv(child)[:1]))
            try:
                socket.create_connection(("127.0.0.1", free_port), timeout=1).close()
            except OSError:
                return master.poll(), False
            return master.poll(), bool(workers)

        wait_for(serving, lambda s: s[0] is not None or s[1], TIMEOUT_S, "h2o's master and its h2o listening")
        assert master.poll() is None
        yield master.pid, free_port
    finally:
        master.terminate()  # Server::Starter passes it on to h2o and waits for it
        master.wait(TIMEOUT_S)
        wait_for(lambda: gone(workers), bool, TIMEOUT_S, "h2o gone with its master")


def test_inspect_and_observe_recognise_h2o_under_its_perl_master(h2o_master: tuple[int, int], tmp_path: Path) -> None:
    master, port = h2o_master
    seen = argv(master)
    assert seen[:2] == ["perl", "-x"] and seen[2].endswith("start_server") and "--" in seen, seen
    assert os.path.basename(seen[seen.index("--") + 1]) == "h2o", seen  # the witness: what it runs after `--`
    out = tmp_path / "inspect.json"
    result = run_cli(["inspect", str(master), "--json", str(out)], columns=200)
    assert result.exit_code == 0, result.output
    assert "is not a server this tool knows" not in result.stdout, result.stdout
    inspected = json.loads(out.read_text())
    assert inspected["program"] == "perl" and inspected["recognised"] == "h2o", inspected["recognised"]
    # observe recognises it by the same registry, by its port and by its master's pid alike
    assert recognised_kind(find_server(port=port)) == "h2o"
    assert recognised_kind(find_server(pid=master)) == "h2o"
