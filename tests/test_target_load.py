"""The load commands against a server elsewhere (--target HOST:PORT), attributed by the replies alone.

The server is started as a separate process the tool knows nothing about: `accept-order serve` (replies
`worker I pid P`) or nginx by hand (replies `worker PID`). Its own count is the witness: serve's tally of
what each worker accepted, nginx's access log per pid. A load's driver processes count by reply key and the
parent places the keys on worker indices once (loads/reply_keys.py): the per-worker counts must be the
server's own, whichever driver saw which worker first."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_runs import ran_in_process
from conftest import assert_one_error_line, run_cli, wait_for
from nginx_by_hand import nginx_by_hand
from serve_process import Serve, serving

from accept_order.core.histogram import LatencyHistogram
from accept_order.loads.generator import LoadResult
from accept_order.loads.reply_keys import ReplyWorkers, key_parts, reply_key

SERVE_WORKERS = 3
TIMEOUT_S = 60.0


def accept_order_process(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI as its own process, where a test asserts its whole stderr: in this process (run_cli) what a forked
    driver writes there is lost with the child's copy of the captured stream, and a hang has no timeout."""
    return subprocess.run(
        [sys.executable, "-m", "accept_order", *args], capture_output=True, text=True, timeout=TIMEOUT_S * 2
    )


@pytest.fixture
def serve(free_port: int, tmp_path: Path) -> Iterator[Serve]:
    """`accept-order serve --mode blocking` on free_port, as a server started by someone else would be."""
    with serving(tmp_path / "tally.json", SERVE_WORKERS, free_port) as started:
        yield started


def per_worker(served: list[int], workers: int) -> list[int]:
    return [served[i] if i < len(served) else 0 for i in range(workers)]


def test_latency_from_two_driver_processes_counts_what_each_worker_accepted(serve: Serve, tmp_path: Path) -> None:
    out = tmp_path / "latency.json"
    target = f"127.0.0.1:{serve.port}"
    ran = ran_in_process(
        "latency",
        "--target",
        target,
        "-w",
        "3",
        "--connections",
        "600",
        "--driver-procs",
        "2",
        "-c",
        "40",
        "--json",
        str(out),
    )
    assert ran.returncode == 0, ran.stderr
    result = json.loads(out.read_text())
    accepted = serve.tally()
    assert sum(result["served"]) == 600 and not result["errors"]
    assert per_worker(result["served"], SERVE_WORKERS) == accepted  # the server's own count, worker by worker
    # shown as for an attached server: each worker a reply named by its pid, one none named (0) where the server
    # says it accepted nothing (on a busy machine a worker can miss all 600: its siblings took them first)
    named = [pid if took else 0 for pid, took in zip(serve.pids, accepted, strict=True)]
    assert [c["pid"] for c in result["counters"]] == named, accepted
    assert "a server elsewhere" in ran.stdout and "Missing" in ran.stdout  # what could not be measured, said once
    assert ran.stdout.count("a server elsewhere") == 1


def test_sweep_burst_and_ramp_add_up_and_add_up_to_the_servers_count(serve: Serve, tmp_path: Path) -> None:
    """Each command's served + failed is what it drove; over the three, each worker served what it says it
    accepted. The ramp is told -w 1: the workers that answered beyond it are added, none dropped."""
    target = f"127.0.0.1:{serve.port}"
    files = {name: tmp_path / f"{name}.json" for name in ("sweep", "burst", "ramp")}
    commands = {
        "sweep": ["sweep", "--accept-batch", "0", "-w", "3", "-n", "300", "-c", "20"],
        "burst": ["burst", "-w", "3", "--clients", "50,150"],
        "ramp": ["ramp", "-w", "1", "--rates", "100,200", "--step", "0.5s"],
    }
    for name, args in commands.items():
        ran = ran_in_process(*args, "--target", target, "--json", str(files[name]))
        assert ran.returncode == 0, f"{name}: {ran.stderr}"
        assert ran.stdout.count("a server elsewhere") == 1, name
    sweep = json.loads(files["sweep"].read_text())["runs"]
    bursts = [c for run in json.loads(files["burst"].read_text())["runs"] for c in run["cells"]]
    ramp = json.loads(files["ramp"].read_text())
    accepted = serve.tally()

    assert len(sweep) == 1 and sum(sweep[0]["served"]) + sum(sweep[0]["errors"].values()) == 300
    assert [sum(c["served"]) + sum(c["errors"].values()) for c in bursts] == [50, 150]
    steps = ramp["steps"]
    assert all(len(s["served"]) == ramp["server"]["workers"] for s in steps)
    answered = [i for i in range(SERVE_WORKERS) if any(per_worker(s["served"], SERVE_WORKERS)[i] for s in steps)]
    assert ramp["server"]["workers"] == max(answered) + 1  # -w 1 grew to the highest index a reply named

    parts = [sweep[0]["served"], *(c["served"] for c in bursts), *(s["served"] for s in steps)]
    served = [sum(per_worker(p, SERVE_WORKERS)[i] for p in parts) for i in range(SERVE_WORKERS)]
    failed = sum(e for part in (sweep[0], *bursts, *steps) for e in part["errors"].values())
    if failed:  # a client that gave up on a busy machine: its connection may still have been accepted
        assert all(s <= a for s, a in zip(served, accepted, strict=True)), (served, accepted)
    else:
        assert served == accepted


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["latency", "--modes", "epoll,blocking"], "--modes"),
        (["latency", "--compare", "epoll"], "--compare"),
        (["latency", "--repeat", "2"], "--repeat"),
        (["latency", "--mode", "epoll"], "--mode"),
        (["burst", "--modes", "epoll"], "--modes"),
        (["burst", "--server", "builtin,nginx"], "--server"),
        (["burst", "--repeat", "2"], "--repeat"),
        (["ramp", "--modes", "epoll,blocking"], "--modes"),
        (["ramp", "--repeat", "2"], "--repeat"),
        (["sweep", "--accept-batch", "1", "--repeat", "2"], "--repeat"),
        (["sweep"], "--accept-batch N"),
        (["sweep", "--accept-batch", "1,4"], "--accept-batch N"),
        (["latency", "--attach", "1", "--port", "80"], "not both"),
    ],
)
def test_what_starts_servers_is_refused_with_a_target(args: list[str], fragment: str) -> None:
    result = run_cli([*args, "--target", "127.0.0.1:9"])
    assert_one_error_line(result, 2, fragment)


@pytest.mark.parametrize(
    "args",
    [
        ["latency", "-n", "20"],
        ["sweep", "--accept-batch", "1", "-n", "20"],
        ["burst", "--clients", "20"],
        ["ramp", "--rates", "50", "--step", "0.2s"],
    ],
)
def test_a_target_where_nothing_listens_is_one_line(args: list[str], unlistened_port: int) -> None:
    # its own process: the one line must be the whole stderr, the drivers' included (review R6 of b2ff60f)
    ran = accept_order_process(*args, "--target", f"127.0.0.1:{unlistened_port}")
    assert ran.returncode == 1, ran.stderr
    assert len(ran.stderr.splitlines()) == 1, ran.stderr
    line = ran.stderr.strip()
    assert line.startswith(f"accept-order: error: --target 127.0.0.1:{unlistened_port}: nothing answers there (")
    assert "ECONNREFUSED" in line and ran.stdout == ""


# -- nginx, whose replies name the pid only ----------------------------------------------------------------

NGINX_WORKERS = 2
NGINX_CONF = """daemon off;
master_process on;
worker_processes {workers};
pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 512; }}
http {{
    log_format pids '$pid $connection_requests';
    access_log {d}/access.log pids;
    keepalive_requests 1000000;
    client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d};
    uwsgi_temp_path {d}; scgi_temp_path {d};
    server {{ listen 127.0.0.1:{port}; location / {{ default_type text/plain; return 200 "worker $pid\\n"; }} }}
}}
"""


def log_lines(log: Path, skip: int, total: int) -> list[tuple[int, int]]:
    """(pid, the request's number on its connection) of the log's lines after the first `skip`, once `total`
    are there (nginx writes a request's line as it finishes it)."""
    lines = wait_for(lambda: log.read_text().splitlines()[skip:], lambda got: len(got) >= total, TIMEOUT_S, "log")
    return [(int(pid), int(n)) for pid, n in (line.split() for line in lines)]


def by_pid(result: dict[str, Any], field: str) -> dict[int, int]:
    pids = [c["pid"] for c in result["counters"]]
    return {pids[i]: n for i, n in enumerate(result[field]) if n}


def test_nginx_replies_naming_the_pid_are_counted_per_pid_as_its_log_says(free_port: int, tmp_path: Path) -> None:
    """Two driver processes each see nginx's workers answer in their own order; the result still gives each
    pid what nginx logged for it: one request per connection, then 10 requests over each kept connection
    (served per pid, and connections per pid: the log's first requests)."""
    with nginx_by_hand(NGINX_CONF, free_port, NGINX_WORKERS, TIMEOUT_S, "accept-order-test-target-") as nginx:
        target = f"127.0.0.1:{nginx.port}"
        common = ["--target", target, "--protocol", "http", "-w", str(NGINX_WORKERS), "--driver-procs", "2"]
        one = tmp_path / "one.json"
        ran = ran_in_process("latency", *common, "-n", "400", "-c", "16", "--json", str(one))
        assert ran.returncode == 0, ran.stderr
        result = json.loads(one.read_text())
        logged = log_lines(nginx.access_log, 0, 400)
        assert sum(result["served"]) == 400 and not result["errors"]
        assert by_pid(result, "served") == dict(Counter(pid for pid, _ in logged))
        assert {c["pid"] for c in result["counters"]} <= set(nginx.workers)

        kept = tmp_path / "kept.json"
        args = ["-n", "400", "-c", "8", "--requests-per-connection", "10", "--json", str(kept)]
        ran = ran_in_process("latency", *common, *args)
        assert ran.returncode == 0, ran.stderr
        result = json.loads(kept.read_text())
        logged = log_lines(nginx.access_log, 400, 400)
        assert sum(result["served"]) == 400 and not result["errors"]
        assert by_pid(result, "served") == dict(Counter(pid for pid, _ in logged))
        assert by_pid(result, "connections") == dict(Counter(pid for pid, n in logged if n == 1))
        histograms = result["worker_histograms"]
        assert [LatencyHistogram.from_dict(h).count for h in histograms] == result["served"]


# -- the placement itself -------------------------------------------------------------------------------------


def test_keys_counted_in_two_processes_in_opposite_orders_land_on_one_index_per_pid() -> None:
    workers = ReplyWorkers(2)
    first, second = workers.from_reply(b"worker 900"), workers.from_reply(b"worker 700")
    assert first is not None and second is not None
    drivers = [Counter({first: 5, second: 1}), Counter({second: 7, first: 2})]  # each saw the other first
    served: Counter[int] = Counter()
    for counts in drivers:
        served.update(counts)
    result = LoadResult(LatencyHistogram(), Counter(), served, 1.0)
    placed = result.placed(workers.place(result.keys()))
    assert workers.pids == [700, 900]  # by pid: the same however the drivers met them
    assert placed.served == Counter({0: 8, 1: 7})
    assert placed.summary(2).served == (8, 7)


def test_places_hold_over_the_runs_loads_and_more_workers_than_w_are_added() -> None:
    workers = ReplyWorkers(2)
    assert workers.place([reply_key(None, 50)]) == {50: 0}
    later = workers.place([reply_key(None, 40), reply_key(None, 50), reply_key(None, 60)])
    assert later == {50: 0, 40: 1, 60: 2}  # 50 keeps its index; the newcomers by pid, past -w when full
    result = LoadResult(LatencyHistogram(), Counter(), Counter({40: 1, 50: 2, 60: 3}), 1.0).placed(later)
    assert result.summary(2).served == (2, 1, 3)  # the third worker counted, not dropped


def test_a_reply_naming_its_index_is_placed_there() -> None:
    workers = ReplyWorkers(1)
    named = [workers.from_reply(b"worker 2 pid 70"), workers.from_reply(b"worker 0 pid 90")]
    assert [key_parts(k) for k in named if k is not None] == [(2, 70), (0, 90)]
    assert workers.place(k for k in named if k is not None) == {named[0]: 2, named[1]: 0}
    assert workers.pids == [90, 0, 70]  # index 1 named by no reply yet
    restarted = reply_key(0, 95)  # index 0 again, another pid: the next free index
    assert workers.place([restarted]) == {restarted: 1}
    assert workers.from_reply(b"worker") is None and workers.from_reply(b"worker -1 pid 5") is None
