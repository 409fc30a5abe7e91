"""A pool whose workers accepted more than it opened says what closes a kept connection in the serving server's terms.

'latency --attach <lighttpd> --protocol http --pool -c 8 --requests-per-connection 0 -n 2000' at Debian's lighttpd
1.4.69 (2 workers, server.max-keep-alive-requests = 20; load 5, Linux 6.18, 2 vCPUs): the kernel counted 98 accepts
for the pool of 8, lighttpd logged 1,897 requests, and the report said the 90 reopened were closed 'as nginx's
keepalive_requests, 1000 by default, does', its file recording the program as lighttpd. Now each kind's own limits
(ServerKind.cures' ClientLimit), a launched server's only where its config leaves them at the default, and a
general sentence where the program is not known."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli, wait_for
from test_attach_h2c_port import ATTACH
from test_small_sentences_held_nothing import pool_run

from accept_order.core.spec import ServerSpec
from accept_order.experiments.latency.kept_tail import kept_tail_verdict

GENERAL = "(a server that closes a kept connection after so many requests on it, or after so long; or a request"


def _reopened(server: ServerSpec, program: dict[str, Any] | None) -> str:
    """A pool of 8 over 2 workers whose kernel counted 98 accepts, as the lighttpd run above."""
    run = pool_run("attached", (4, 4), 3000)
    evidence: dict[str, Any] = {"accept_counts": {"available": True}}
    if program is not None:
        evidence["program"] = program
    run = dataclasses.replace(run, server=server, served=(50, 48), pool=(8, 8), connections=(), evidence=evidence)
    said = kept_tail_verdict(run)
    assert said is not None and said.startswith("No verdict on the pool's split: its workers accepted 98"), said
    return said


def _attached(recognised: str | None) -> str:
    server = ServerSpec(kind="attached", mode="attached", workers=2, port=18432, attach=(4242,), protocol="http")
    return _reopened(server, {"pid": 4242, "name": "x", "recognised": recognised})


def test_an_attached_server_is_said_by_its_own_limits() -> None:
    lighttpd = _attached("lighttpd")
    assert "after so many requests on it, as lighttpd's server.max-keep-alive-requests can; or" in lighttpd, lighttpd
    assert "nginx" not in lighttpd, lighttpd
    nginx = _attached("nginx")
    assert "after so many requests on it, or so long, as nginx's keepalive_requests or keepalive_time can" in nginx
    apache = _attached("apache")
    assert "as apache's MaxKeepAliveRequests or KeepAlive Off can" in apache and "nginx" not in apache, apache


def test_a_program_not_known_or_not_recorded_is_said_generally() -> None:
    for said in (_attached(None), _attached("gunicorn")):  # gunicorn: no limit of its own on a kept connection
        assert GENERAL in said and "nginx" not in said, said
    server = ServerSpec(kind="attached", mode="attached", workers=2, port=18432, attach=(4242,), protocol="http")
    assert GENERAL in _reopened(server, None)  # a file from before the program was recorded


def test_a_launched_server_names_only_the_limits_its_config_leaves() -> None:
    """The tool's nginx config lifts keepalive_requests and keepalive_time under a kept load: neither is named;
    Puma's max_fast_inline is left at its default (10), so it is; HAProxy's option httpclose is not in its config."""
    nginx = _reopened(ServerSpec(kind="nginx", mode="epoll", workers=2).validated(), None)
    assert GENERAL in nginx and "keepalive_requests" not in nginx, nginx
    puma = _reopened(ServerSpec(kind="puma", mode="cluster", workers=2).validated(), None)
    assert "as puma's max_fast_inline can" in puma, puma
    # option httpclose closes every connection: a launched HAProxy's config has none
    haproxy = _reopened(ServerSpec(kind="haproxy", mode="epoll", workers=2).validated(), None)
    assert GENERAL in haproxy and "httpclose" not in haproxy, haproxy
    assert "as haproxy's option httpclose can" in _attached("haproxy")  # an attached one may


def _lighttpd_conf(root: Path, port: int) -> str:
    """Debian's lighttpd, 2 workers, closing each kept connection after 20 requests; its log: each request's
    keep-alive count on its connection (%k: 0 for a connection's first), the witness of its closes."""
    return "\n".join(
        [
            f'server.document-root = "{root}"',
            f"server.port = {port}",
            'server.bind = "127.0.0.1"',
            "server.max-worker = 2",
            "server.max-keep-alive-requests = 20",
            'index-file.names = ("index.html")',
            f'server.errorlog = "{root}/error.log"',
            'server.modules += ("mod_accesslog")',
            f'accesslog.filename = "{root}/access.log"',
            'accesslog.format = "%k"',
        ]
    )


def _workers(master: int) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == master:
            found.append(int(pid))
    return found


@ATTACH
@pytest.mark.skipif(not Path("/usr/sbin/lighttpd").exists(), reason="needs Debian's lighttpd")
def test_an_attached_lighttpd_is_said_by_its_own_limit(free_port: int, tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("hi\n")
    (tmp_path / "lighttpd.conf").write_text(_lighttpd_conf(tmp_path, free_port))
    # a session of its own: its master passes a signal on to its whole process group
    conf = str(tmp_path / "lighttpd.conf")
    lighttpd = subprocess.Popen(["/usr/sbin/lighttpd", "-D", "-f", conf], start_new_session=True)
    try:
        wait_for(lambda: _workers(lighttpd.pid), lambda w: len(w) == 2, 30, "lighttpd's 2 workers")
        wait_for(
            lambda: (tmp_path / "error.log").read_text() if (tmp_path / "error.log").exists() else "",
            lambda log: "server started" in log,
            30,
            "lighttpd's 'server started'",
        )
        out = tmp_path / "attached.json"
        args = ["latency", "--attach", str(lighttpd.pid), "--port", str(free_port), "--protocol", "http", "--pool"]
        result = run_cli([*args, "-c", "4", "--requests-per-connection", "0", "-n", "400", "--json", str(out)])
    finally:
        lighttpd.send_signal(signal.SIGINT)
        lighttpd.wait(30)
    assert result.exit_code == 0, result.output
    # the witness: lighttpd's own log, each request's place on its connection; a 0 opens one, 20 the last it allows
    counts = [int(k) for k in (tmp_path / "access.log").read_text().split()]
    assert len(counts) == 400 and max(counts) == 20 and counts.count(0) > 4, counts
    assert json.loads(out.read_text())["evidence"]["program"]["recognised"] == "lighttpd"
    said = " ".join(result.stdout.split())
    assert "No verdict on the pool's split" in said, said
    assert "as lighttpd's server.max-keep-alive-requests can; or a request the client gave up on" in said, said
    assert "nginx" not in said, said
