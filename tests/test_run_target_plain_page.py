"""run --target at a plain page (Debian's nginx answering 'ok', naming no worker) refuses, in one line, exit 1, and
says what measures it instead; the two commands it names, run as given, do.

run's one client attributes each connection as it ends, and its sequence, per-worker table and verdict are all of
workers, so a reply naming none leaves it nothing to show: c043737b counted such replies served in the loads, and run
still read 'served nothing: 6 × unexpected reply' with 'what a reply must read' alone. It now names latency -c 1 (what
was served, its rate and latency, one connection at a time) and run --attach (which worker took each, where the
server runs here). The witness: nginx's own access log, a line per request it answered.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli, wait_for
from nginx_by_hand import nginx_by_hand, one_server_conf

CONNECTIONS = 6


def _logged(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def _answered(log: Path, at_least: int) -> list[str]:
    """The access log's lines once it holds `at_least` (nginx writes a request's line after its reply is sent)."""
    return wait_for(lambda: _logged(log), lambda lines: len(lines) >= at_least, 30, "nginx's access log lines")


def test_run_target_at_a_plain_page_names_what_measures_it(tmp_path: Path, free_port: int) -> None:
    port = free_port
    with nginx_by_hand(one_server_conf("$status"), port, workers=2, timeout=30) as nginx:
        target = ["--target", f"127.0.0.1:{port}", "--protocol", "http"]
        refused = run_cli(["run", *target, "-n", str(CONNECTIONS)])
        assert refused.exit_code == 1, refused.output
        (line,) = refused.stderr.strip().splitlines()  # one line
        latency = f"latency --target 127.0.0.1:{port} --protocol http -c 1 -n {CONNECTIONS}"
        attach = f"run --attach PID --host 127.0.0.1 --port {port} --protocol http"
        assert f"'accept-order {latency}'" in line and f"'accept-order {attach}'" in line, line
        report = " ".join(refused.stdout.split())  # as one line: where rich wraps it is no matter
        assert latency in report and attach in report  # the report says it too
        before = len(_answered(nginx.access_log, CONNECTIONS))  # run's connections, each answered

        path = tmp_path / "latency.json"
        measured = run_cli([*latency.split(), "--json", str(path)])
        assert measured.exit_code == 0, measured.output
        timed = sum(n for _, n in json.loads(path.read_text())["histogram"]["counts"])
        lines = _answered(nginx.access_log, before + CONNECTIONS)
        assert timed == len(lines) - before == CONNECTIONS and set(lines[before:]) == {"200"}

        path = tmp_path / "run.json"
        given = attach.replace("PID", str(nginx.master)).split()
        attached = run_cli([*given, "-n", str(CONNECTIONS), "--json", str(path)])
        assert attached.exit_code == 0, attached.output
        records = json.loads(path.read_text())["records"]
        lines = _answered(nginx.access_log, before + 2 * CONNECTIONS)
        assert len(lines) - before == 2 * CONNECTIONS
        assert [r["pid"] in nginx.workers for r in records] == [True] * CONNECTIONS  # each named by the worker's pid
