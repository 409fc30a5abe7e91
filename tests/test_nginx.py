"""nginx as a server the tool launches: its own access log agrees with the tool, the verdicts come from the
records, every process and file it makes is the tool's to remove, and failures are one line."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import psutil
import pytest
from conftest import OutputReader, assert_one_error_line, child_processes, gone, run_cli, wait_for

from accept_order.core.cpus import allowed_cpus
from accept_order.core.errors import ServerUnavailable
from accept_order.core.measures import ConnectionRecord
from accept_order.core.spec import SequentialLoad, ServerSpec
from accept_order.experiments import documents, lifecycle, session
from accept_order.experiments.order.result import RunResult
from accept_order.servers.launched.nginx_config import NGINX_MODES, nginx_binary, render_config

try:
    nginx_binary()
except ServerUnavailable as exc:
    pytest.skip(f"nginx launched runs need nginx and its Lua module: {exc}", allow_module_level=True)

CONNECTIONS = 40
VARIANTS = [("epoll", 1), ("epoll", 0), ("accept-mutex", 1), ("reuseport", 1)]
VARIANT_IDS = ["epoll", "epoll-multi-accept", "accept-mutex", "reuseport"]
SYSTEM_DIRS = ("/etc/nginx", "/var/log/nginx")


def nginx_run(mode: str, accept_batch: int = 1, connections: int = CONNECTIONS, **spec: Any) -> RunResult:
    server = ServerSpec(kind="nginx", mode=mode, workers=3, accept_batch=accept_batch, **spec)
    return session.run_sequential(server, SequentialLoad(connections=connections))


def logged(result: RunResult) -> list[list[int]]:
    witness = result.evidence["witness"]
    assert witness["source"] == "nginx access log"
    requests: list[list[int]] = witness["requests"]
    return requests


def snapshot(*roots: str) -> dict[str, tuple[int, int]]:
    """(mtime_ns, size) of every file and directory under `roots` (what nginx could have touched)."""
    seen: dict[str, tuple[int, int]] = {}
    for root in roots:
        for top, dirs, files in os.walk(root):
            for name in [top, *(os.path.join(top, f) for f in dirs + files)]:
                st = os.lstat(name)
                seen[name] = (st.st_mtime_ns, st.st_size)
    return seen


def prefix_arg(master: psutil.Process) -> str:
    """The private directory nginx was started with (`-p DIR`); nginx rewrites its title, so split on spaces."""
    words = " ".join(master.cmdline()).split()
    return words[words.index("-p") + 1]


def nginx_masters(parent: psutil.Process) -> list[psutil.Process]:
    return [p for p in child_processes(parent.pid) if "nginx" in p.name()]


# -- 1. the access log is an independent witness -----------------------------------------------------


@pytest.mark.parametrize(("mode", "accept_batch"), VARIANTS, ids=VARIANT_IDS)
def test_access_log_agrees_with_the_records(mode: str, accept_batch: int) -> None:
    from accept_order.experiments.order.report import witness_text

    result = nginx_run(mode, accept_batch)
    assert result.failed == 0 and result.served == CONNECTIONS, result.records
    requests = logged(result)
    log_pids = [pid for pid, _ in requests]
    assert log_pids == [r.pid for r in result.records]
    # per-worker counts: the log's tally by pid, in worker order, is the tool's tally
    by_pid = Counter(log_pids)
    assert [by_pid[c.pid] for c in sorted(result.counters, key=lambda c: c.index)] == result.counts
    assert sum(result.counts) == CONNECTIONS
    assert set(by_pid) <= {c.pid for c in result.counters}
    assert all(1 <= port <= 65535 and port != result.port for _, port in requests)
    text = witness_text(result)
    assert text is not None
    assert f"the same worker for each of the {CONNECTIONS} served connections, in order" in text.plain


# -- 2. verdicts from the records --------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "accept_batch"), VARIANTS, ids=VARIANT_IDS)
def test_verdicts_nginx_shows_here(mode: str, accept_batch: int) -> None:
    result = nginx_run(mode, accept_batch)
    pattern = result.verdict.pattern
    assert result.failed == 0
    if mode == "epoll" and accept_batch == 1:
        # EPOLLEXCLUSIVE plus ngx_reorder_accept_events: a worker re-adds the listener at its first accept,
        # then keeps it for 16 more
        assert pattern == "one per worker at start, then runs of 16 per worker", result.sequence
        assert result.verdict.model == "runs-of-16" and result.verdict.expected
        assert sorted(result.counts)[-2:] == [17, 17], result.sequence  # 16 plus its warm-up connection each
    elif mode == "reuseport":
        assert pattern.startswith("hash-spread"), result.sequence
        assert all(result.counts), result.counts  # the hash reaches every worker over 40 source ports
    else:
        # multi_accept on, or the accept mutex: one worker keeps the listener (the idle-order model that
        # also fits varies: LIFO or first-registered, so only the shared part is asserted)
        assert "one worker takes all" in pattern, (pattern, result.sequence)
        assert sorted(result.counts) == [0, 0, CONNECTIONS], result.sequence


def test_nginx_epoll_first_connections_are_its_mechanisms() -> None:
    # `run --server nginx -m epoll -w 4 -n 12`: one connection to each worker (each re-adds its listener at
    # its first accept), then the first of them again, for the rest: its run of 16 outlasts the load.
    server = ServerSpec(kind="nginx", mode="epoll", workers=4, accept_batch=1)
    result = session.run_sequential(server, SequentialLoad(connections=12))
    sequence = result.sequence
    assert result.failed == 0
    assert sorted(sequence[:4]) == [0, 1, 2, 3] and sequence[4:] == [sequence[0]] * 8, sequence
    v = result.verdict
    assert (v.pattern, v.model, v.expected) == (
        "one per worker at start, then a run of 8 (of 16: the load ended first)", "runs-of-16", True)  # fmt: skip
    assert (v.fit, v.informative) == (12, 12)


# -- 3. process and file ownership -------------------------------------------------------------------


def test_nginx_processes_and_files_are_the_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    targets: list[Any] = []
    make_target = lifecycle.make_target

    def capturing(*args: Any, **kwargs: Any) -> Any:
        target = make_target(*args, **kwargs)
        targets.append(target)
        return target

    monkeypatch.setattr(lifecycle, "make_target", capturing)
    before = snapshot(*SYSTEM_DIRS)
    system_pid = os.path.exists("/run/nginx.pid")
    seen: dict[str, Any] = {}

    def on_record(rec: ConnectionRecord) -> None:
        if seen:
            return
        masters = nginx_masters(psutil.Process())
        assert len(masters) == 1, masters
        seen["master"] = masters[0].pid
        seen["workers"] = sorted(p.pid for p in masters[0].children())
        seen["directory"] = prefix_arg(masters[0])
        seen["files"] = sorted(os.listdir(seen["directory"]))

    result = session.run_sequential(
        ServerSpec(kind="nginx", mode="epoll", workers=3, accept_batch=1), SequentialLoad(connections=10), on_record
    )
    assert result.served == 10
    assert seen["workers"] == sorted(c.pid for c in result.counters)
    assert seen["master"] not in seen["workers"]
    directory = seen["directory"]
    assert os.path.basename(directory).startswith("accept-order-nginx-")
    assert {"nginx.conf", "nginx.pid", "access.log"} <= set(seen["files"])
    # after the run: every process gone, the private directory removed, the system's nginx untouched
    assert gone([seen["master"], *seen["workers"]])
    assert not os.path.exists(directory)
    (target,) = targets
    assert target.directory == "" and target.master is None
    assert snapshot(*SYSTEM_DIRS) == before
    assert os.path.exists("/run/nginx.pid") == system_pid


# -- 4. failing starts are one line ------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "reuseport"), [("epoll", False), ("reuseport", True)], ids=["plain", "reuseport"])
def test_a_port_with_a_listener_is_refused_naming_who_holds_it(mode: str, reuseport: bool) -> None:
    """Checked before nginx is launched: with `listen ... reuseport` nginx would otherwise join a foreign
    SO_REUSEPORT group on that port and silently share its connections (and exit 0)."""
    with socket.socket() as busy:
        if reuseport:
            busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_cli(["run", "--server", "nginx", "-m", mode, "--port", str(port), "-n", "5"])
    line = assert_one_error_line(result, 1, f"port {port} on 127.0.0.1 already has a listener", f"pid {os.getpid()}")
    assert "nginx would join its SO_REUSEPORT group" in line
    assert not psutil.Process().children(recursive=True)
    assert result.stdout == ""


def test_accept_batch_other_than_0_or_1_is_a_usage_error() -> None:
    result = run_cli(["run", "--server", "nginx", "--accept-batch", "5", "-n", "5"])
    assert_one_error_line(result, 2, "--accept-batch", "multi_accept")
    assert not psutil.Process().children()


def test_a_builtin_only_mode_names_nginxs_modes() -> None:
    result = run_cli(["run", "--server", "nginx", "-m", "poll", "-n", "5"])
    assert_one_error_line(result, 2, "nginx has no mode 'poll'", ", ".join(NGINX_MODES))
    assert not psutil.Process().children()


# -- 5. SIGTERM mid-load -----------------------------------------------------------------------------


def test_sigterm_stops_nginx_and_exits_143() -> None:
    env = {**os.environ, "COLUMNS": "200"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "accept_order", "run", "--server", "nginx", "-n", "100000"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        cli = psutil.Process(proc.pid)

        def workers() -> tuple[list[psutil.Process], list[psutil.Process]]:
            if proc.poll() is not None:
                pytest.fail(f"accept-order exited early: {proc.communicate()}")
            try:
                masters = nginx_masters(cli)
                return masters, [w for m in masters for w in child_processes(m.pid)]
            except psutil.Error:
                return [], []

        masters, found = wait_for(workers, lambda mw: len(mw[1]) == 3, 20, "nginx's 3 workers")
        directory = prefix_arg(masters[0])
        # the load is under way: nginx has logged requests
        log = Path(directory, "access.log")
        wait_for(lambda: log.exists() and log.stat().st_size > 0, bool, 10, "nginx's first logged request")
        pids = [masters[0].pid, *(w.pid for w in found)]
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 143, (stdout, stderr)
    lines = stderr.splitlines()
    assert lines == ["accept-order: error: terminated; all workers stopped"], stderr
    wait_for(lambda: gone(pids), bool, 10, f"nginx processes {pids} to end")
    assert not os.path.exists(directory)


def http_worker(port: int) -> int:
    """One request as the hint's `printf 'GET / HTTP/1.0...' | nc` sends it; the pid nginx's reply names."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
        reply = b""
        while chunk := sock.recv(4096):
            reply += chunk
    body = reply.partition(b"\r\n\r\n")[2].split()
    assert body[:1] == [b"worker"], reply
    return int(body[1])


def test_serve_keeps_nginx_up_for_requests_by_hand_and_tallies_its_log(tmp_path: Path) -> None:
    """serve --server nginx: the banner names nginx's address and worker pids; SIGTERM stops it (exit 0)
    and the tally is nginx's own access log: the workers its replies named, in order."""
    saved = tmp_path / "serve.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "accept_order", "serve", "--server", "nginx", "-w", "2", "--json", str(saved)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.stdout is not None and proc.stderr is not None
    out, err = OutputReader(proc.stdout), OutputReader(proc.stderr)
    try:
        out.wait_for(r"try: .*\n", 20)
        port = int(out.wait_for(r"nginx, mode epoll, 2 workers listening on 127\.0\.0\.1:(\d+)", 1).group(1))
        pids = [int(p) for p in re.findall(r"^  worker \d pid (\d+)$", out.text, re.MULTILINE)]
        assert len(pids) == 2 and "printf 'GET / HTTP/1.0" in out.text, out.text
        masters = nginx_masters(psutil.Process(proc.pid))
        directory = prefix_arg(masters[0])
        replies = [pids.index(http_worker(port)) for _ in range(5)]
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = out.finish()
    assert code == 0, err.finish()
    assert re.search(r"^Sequence: " + " ".join(map(str, replies)) + "$", text, re.MULTILINE), text
    assert "from the nginx access log, in its order (5 requests)" in text
    doc = documents.load(saved)[1]
    assert doc["sequence"] == replies
    assert [c["pid"] for c in doc["counters"]] == pids
    wait_for(lambda: gone([m.pid for m in masters] + pids), bool, 10, "nginx's processes to end")
    assert not os.path.exists(directory)


# -- 6. --pin is worker_cpu_affinity -----------------------------------------------------------------


def test_pin_sets_each_workers_affinity(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    result = run_cli(["run", "--server", "nginx", "--pin", "-w", "2", "-n", "10", "--json", str(out)])
    assert result.exit_code == 0, result.output
    kind, doc = documents.load(out)
    assert kind == "run"
    cpus = allowed_cpus()
    affinities = [tuple(c["affinity"]) for c in sorted(doc["counters"], key=lambda c: c["index"])]
    assert affinities == [(cpus[i % len(cpus)],) for i in range(2)]
    assert all(r["error"] is None for r in doc["records"])


# -- 7. the seed's Lua loop --------------------------------------------------------------------------


def test_work_iters_is_the_seeds_loop() -> None:
    conf = render_config(
        "/nonexistent/dir",
        NGINX_MODES["epoll"],
        host="127.0.0.1",
        port=8080,
        workers=3,
        backlog=511,
        multi_accept=False,
        cpus=(),
        work_us=0,
        work_iters=200000,
    )
    assert "for names = 1, 200000 do i = i + 1 end" in conf
    assert "accept_mutex_delay 500ms;" in conf  # nginx's default, said out loud
    assert "content_by_lua_block" in conf
    without = render_config(
        "/nonexistent/dir",
        NGINX_MODES["epoll"],
        host="127.0.0.1",
        port=8080,
        workers=3,
        backlog=511,
        multi_accept=False,
        cpus=(),
        work_us=0,
        work_iters=0,
    )
    assert "for names" not in without
    result = nginx_run("epoll", work_iters=200000)
    assert result.served == CONNECTIONS and result.failed == 0
    assert [pid for pid, _ in logged(result)] == [r.pid for r in result.records]


# -- 8. compare across servers -----------------------------------------------------------------------


def test_compare_builtin_and_nginx_share_one_table() -> None:
    result = run_cli(["compare", "--server", "builtin,nginx", "--modes", "epoll,reuseport", "-n", "20"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.count("accept-order compare") == 1
    header = next(line for line in out.splitlines() if "sequence" in line)
    assert header.split()[:2] == ["server", "mode"]
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in (["builtin"], ["nginx"])]
    assert [row[:2] for row in rows] == [
        ["builtin", "epoll"],
        ["builtin", "reuseport"],
        ["nginx", "epoll"],
        ["nginx", "reuseport"],
    ]
    for row in rows:
        served = [int(x) for x in row[22:25]]  # server, mode, 20 sequence marks, then 3 counts
        assert sum(served) == 20, row
    assert "not available" not in out
