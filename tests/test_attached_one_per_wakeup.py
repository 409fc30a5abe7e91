"""An attached server that takes one connection a wakeup is modelled so, as the launched one of the same settings is.

'latency --attach' of nginx 1.22 with accept_mutex on and multi_accept off (nginx's default) read 'holder (all)',
the tool's own nginx of the same settings 'holder': how many connections a wakeup takes is in the config, which /proc
does not show. The kernel does: the accept counter now counts the accepts that came back empty (EAGAIN), and a server
that accepts until EAGAIN ends each wakeup with one. Attached, 2 workers, accept_mutex on: multi_accept off 0 empty of
2,000 accepts at 2 and at 8 clients, on 1,204 and 510. None empty of at least 20: batch 1. Nor fewer empty than
accepting until EAGAIN would make under a closed loop (a wakeup takes at most its clients, so at least accepted /
clients end empty): PyPI's gunicorn (3 sync workers, 12 clients) read 3 empty of 2,000 and was modelled 'shared
(all)', its p99 1.3-2.2 times the measured one; a sync worker accepts one, serves it and accepts again."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from gunicorn_by_hand import gunicorn_by_hand
from nginx_by_hand import nginx_by_hand, one_server_conf
from test_attached_listener_queues_model import attached
from waiting import wait_for

from accept_order.analysis.model_check import discipline_of
from accept_order.core.spec import ServerSpec
from accept_order.experiments.latency.model_check import predict
from accept_order.experiments.latency.model_queues import one_per_wakeup, queues_text
from accept_order.probes.bpftrace_readings import parse_empty
from accept_order.results.merge_evidence import add_evidence
from accept_order.servers.registry import known_mode

START_TIMEOUT_S = 10.0
MUTEX = {"listeners": 1, "workers": [[0], [], [], []], "held": [[0]] * 4}

CONF = """daemon off;
worker_processes {workers};
pid {d}/nginx.pid;
events {{ worker_connections 256; accept_mutex on; multi_accept {multi}; }}
http {{
    access_log off;
    client_body_temp_path {d}/cb; proxy_temp_path {d}/p; fastcgi_temp_path {d}/f;
    uwsgi_temp_path {d}/u; scgi_temp_path {d}/s;
    server {{ listen 127.0.0.1:{port}; location / {{ return 200 "hi\\n"; }} }}
}}
"""


def counted(
    empty: dict[str, int] | None,
    counts: dict[str, int] | None = None,
    available: bool = True,
    program: str | None = None,
    threads: int = 1,
) -> Any:
    """The mutex reading of 4 attached workers with the kernel's accept counts (1,000 accepts unless `counts`), the
    program inspect named (`program`; None: not recorded) and each worker's threads as the busy looks read them."""
    result = attached(MUTEX, rows=1)
    kernel: dict[str, Any] = {"available": available, "why": "bpftrace", "counts": counts or {"4243": 1000}}
    if empty is not None:
        kernel["empty"] = empty
    evidence = {**result.evidence, "accept_counts": kernel}
    if program is not None:
        evidence["program"] = {"pid": 4242, "name": program, "recognised": program}
        looks = {"pid": 0, "threads": threads, "looks": 0, "idle": 0, "waits": {}, "busy_s": 0.0, "slept_s": 0.0}
        evidence["busy_waits"] = {"span_s": 1.0, "workers": [looks | {"pid": 4243 + i} for i in range(4)]}
    return replace(result, evidence=evidence)


def test_no_empty_accept_is_one_connection_a_wakeup() -> None:
    one = counted({})
    assert one_per_wakeup(one) == 1000
    model = predict(one)
    assert model is not None and (model.discipline, model.batch, model.queue) == ("holder", 1, "holder"), model
    said = queues_text(replace(one, model=model))
    assert said is not None and "(one connection a wakeup: none of the 1,000 accepts the kernel counted" in said
    # the launched nginx of the same settings (multi_accept off, its default): the same discipline and batch
    launched = discipline_of(known_mode("nginx", "accept-mutex"), ServerSpec(kind="nginx", mode="accept-mutex"))
    assert launched == (model.discipline, model.batch)


@pytest.mark.parametrize(
    "result",
    [
        counted({"4243": 63}),  # as many as accepting until EAGAIN makes (1,000 at 16 clients: 63): or a herd's
        counted(None),  # not counted (a file from before it, a periodic reading's counts)
        counted({}, counts={"4243": 19}),  # too few to say
        counted({}, available=False),
    ],
)
def test_where_the_kernel_cannot_say_all_that_wait_are_taken(result: Any) -> None:
    assert one_per_wakeup(result) is None
    model = predict(result)
    assert model is not None and (model.discipline, model.batch) == ("holder", 0), model
    said = queues_text(replace(result, model=model))
    assert said is not None and "how many it takes is the server's own setting" in said, said


def test_fewer_empty_than_taking_all_would_make_is_one_a_wakeup() -> None:
    """3 empty of 1,000 accepts at 16 clients by gunicorn's one-thread workers: taking all that wait would have made
    63 or more; at an open loop's rate any number may wait, so the same counts say nothing."""
    few = counted({"4243": 2, "4244": 1}, program="gunicorn")
    assert one_per_wakeup(few) == 1000
    model = predict(few)
    assert model is not None and (model.discipline, model.batch) == ("holder", 1), model
    said = queues_text(replace(few, model=model))
    assert (
        said is not None
        and "(one connection a wakeup, or a few: gunicorn's workers, one thread each, serve one " in said
    )
    assert "at a time, and 3 of the 1,000 accepts the kernel counted came back empty" in said, said
    assert "would end every wakeup with one, 63 or more with at most 16 waiting)" in said, said
    assert one_per_wakeup(counted({"4243": 62}, program="gunicorn")) == 1000  # one under the floor
    assert one_per_wakeup(counted({"4243": 62}, program="unicorn", threads=3)) == 1000  # one a worker, whatever else
    assert one_per_wakeup(replace(few, load=replace(few.load, rate=500.0))) is None


@pytest.mark.parametrize(
    ("program", "threads", "why"),
    [
        # an event loop: one a turn of its loop, every connection it holds served interleaved
        ("nginx", 1, "but nginx's workers are event loops, each serving all it holds interleaved)"),
        ("haproxy", 1, "but haproxy's workers are event loops"),
        ("gunicorn", 5, "but gunicorn's workers are pools of threads, serving several connections at once)"),  # gthread
        ("uwsgi", 3, "but uwsgi's workers are pools of threads"),  # uWSGI's threads
        ("no-such-program", 1, "but what each worker serves at once is not known (a program this tool does not"),
        (None, 1, "name, or none recorded)"),  # a file from before the program was recorded
    ],
)
def test_a_few_empty_are_one_a_wakeup_only_where_a_worker_serves_one_at_a_time(
    program: str | None, threads: int, why: str
) -> None:
    """Debian's nginx by default (accept_mutex off, multi_accept off) came back empty 5-10 times in 3,000 accepts at
    50 clients, under the 60 that taking all would make, and modelled one a wakeup its p99 read 0.22 of the measured
    one against 0.41 as 'all': a few empty are the previous model's 'all' wherever a worker is not known to serve one
    connection at a time; the model's note says what the kernel counted and why it is not read one a wakeup (it
    said only that /proc does not show how many a wakeup takes). None empty stays one a wakeup, as before."""
    few = counted({"4243": 2, "4244": 1}, program=program, threads=threads)
    assert one_per_wakeup(few) is None
    model = predict(few)
    assert model is not None and (model.discipline, model.batch) == ("holder", 0), model
    said = queues_text(replace(few, model=model))
    counted_few = "(a wakeup taking all that wait: 3 of the 1,000 accepts the kernel counted came back empty, fewer "
    assert said is not None and counted_few in said and "than the 63 that accepting until none is left makes" in said
    assert why in said and "/proc does not show" not in said, said
    assert one_per_wakeup(counted({}, program=program, threads=threads)) == 1000


def test_the_end_blocks_empty_accepts_are_read_only_where_counted() -> None:
    out = (
        b"accept-order counts begin\n@[12]: 30\n\naccept-order empty accepts\n@empty[12]: 4\n@empty[7]: 1\n\n"
        b"accept-order counts end\n"
    )
    assert parse_empty(out) == {12: 4, 7: 1}
    assert parse_empty(out.replace(b"@empty[12]: 4\n@empty[7]: 1\n", b"")) == {}  # counted, none empty
    assert parse_empty(out.replace(b"accept-order empty accepts\n", b"")) is None  # another program's: not counted
    assert parse_empty(out.replace(b"accept-order counts end\n", b"")) is None  # END not all there


def test_merged_files_add_the_empty_accepts_where_each_counted_them() -> None:
    def run(empty: dict[str, int] | None) -> dict[str, Any]:
        kernel = {"available": True, "why": "bpftrace", "counts": {"1": 10}}
        return {"accept_counts": kernel | ({"empty": empty} if empty is not None else {})}

    both = add_evidence(run({"1": 2}), run({"1": 1, "2": 3}), ("h", "h"))
    assert both["accept_counts"]["empty"] == {"1": 3, "2": 3} and both["accept_counts"]["counts"] == {"1": 20}
    assert "empty" not in add_evidence(run({"1": 2}), run(None), ("h", "h"))["accept_counts"]


@pytest.mark.parametrize("multi", ["off", "on"])
def test_an_attached_nginx_is_read_by_its_empty_accepts(multi: str, free_port: int, tmp_path: Path) -> None:
    """Debian's nginx, accept_mutex on: multi_accept off accepts once a wakeup (none empty: batch 1, as the launched
    one's model); on, until EAGAIN (an empty accept ends each wakeup: not one a wakeup)."""
    if os.geteuid() != 0 or shutil.which("bpftrace") is None:
        pytest.skip("counting accepts in the kernel needs root and bpftrace")
    out = tmp_path / "latency.json"
    with nginx_by_hand(CONF, free_port, 2, START_TIMEOUT_S, multi=multi) as nginx:
        args = ["latency", "--attach", str(nginx.master), "--port", str(free_port), "--protocol", "http"]
        result = run_cli([*args, "-n", "300", "-c", "8", "--json", str(out)], columns=400)
        assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    kernel = doc["evidence"]["accept_counts"]
    if not kernel["available"]:
        pytest.skip(f"the kernel's accept counts were not available: {kernel['why']}")
    assert sum(kernel["counts"].values()) >= 300, kernel
    empty = sum(kernel["empty"].values())
    model = doc["model"]
    if multi == "off":
        assert empty == 0 and model["discipline"] == "holder" and model["batch"] == 1, (kernel, model)
    else:
        assert empty > 0 and model["batch"] == 0, (kernel, model)


DEFAULT_EVENTS = one_server_conf("$remote_port", connections=768)  # Debian's events: accept_mutex, multi_accept off
REQUESTS, CLIENTS = 3000, 50


def test_an_attached_nginx_by_default_is_not_one_a_wakeup(free_port: int, tmp_path: Path) -> None:
    """Debian's nginx with its default events (accept_mutex off, multi_accept off), 2 workers, 3,000 connections 50 at
    once: an event loop taking one connection a turn, a few of its accepts empty, fewer than the 60 that accepting
    until EAGAIN would make; it serves all it holds interleaved, not one at a time, so the model stays 'all' (one a
    wakeup read its p99 0.22 of the measured one against 0.41), and its accept gaps are not its service. Its access
    log holds every connection the kernel counted."""
    if os.geteuid() != 0 or shutil.which("bpftrace") is None:
        pytest.skip("counting accepts in the kernel needs root and bpftrace")
    out = tmp_path / "latency.json"
    empty, floor = 0, REQUESTS // CLIENTS
    for _ in range(2):  # a run with no empty accept, or as many as taking all makes, does not ask the question: again
        with nginx_by_hand(DEFAULT_EVENTS, free_port, 2, START_TIMEOUT_S) as nginx:
            args = ["latency", "--attach", str(nginx.master), "--port", str(free_port), "--protocol", "http"]
            result = run_cli([*args, "-n", str(REQUESTS), "-c", str(CLIENTS), "--json", str(out)], columns=400)
            assert result.exit_code == 0, result.output
            lines = wait_for(
                lambda: nginx.access_log.read_text().splitlines(),
                lambda lines: len(lines) >= REQUESTS,
                START_TIMEOUT_S,
                "nginx's access log to hold every request",
            )
        doc = json.loads(out.read_text())
        kernel = doc["evidence"]["accept_counts"]
        if not kernel["available"]:
            pytest.skip(f"the kernel's accept counts were not available: {kernel['why']}")
        assert sum(kernel["counts"].values()) == len(lines) == REQUESTS, (kernel["counts"], len(lines))
        empty = sum(kernel["empty"].values())
        if 0 < empty < floor:
            break
    if not 0 < empty < floor:
        pytest.skip(f"{empty} empty accepts in each of two runs: none, or as many as taking all would make")
    assert doc["evidence"]["program"]["recognised"] == "nginx", doc["evidence"]["program"]
    model = doc["model"]
    assert (model["discipline"], model["batch"]) == ("shared", 0), (kernel["empty"], model)
    assert not model.get("service_gaps"), model
    assert "one connection a wakeup" not in result.output, result.output
    assert "but nginx's workers are event loops, each serving all it holds interleaved)" in result.output, result.output


SLEEPING_APP = """
import time


def app(environ, start_response):
    time.sleep(0.002)
    start_response("200 OK", [("Content-Length", "3")])
    return [b"ok\\n"]
"""


def test_an_attached_gunicorn_takes_one_at_a_time(tmp_path: Path) -> None:
    """PyPI's gunicorn, 3 sync workers (accept one, serve it, accept again: gunicorn/workers/sync.py), 12 clients:
    the kernel counts every request its access log has, and fewer empty accepts than taking all that wait would make
    (600 / 12 = 50): one a wakeup, not 'shared (all)'."""
    if os.geteuid() != 0 or shutil.which("bpftrace") is None:
        pytest.skip("counting accepts in the kernel needs root and bpftrace")
    out = tmp_path / "latency.json"
    with gunicorn_by_hand(SLEEPING_APP, tmp_path, 3, START_TIMEOUT_S * 3) as gunicorn:
        args = ["latency", "--attach", str(gunicorn.master), "--port", str(gunicorn.port), "--protocol", "http"]
        result = run_cli([*args, "-n", "600", "-c", "12", "--json", str(out)], columns=400)
        assert result.exit_code == 0, result.output
        logged = len(gunicorn.access_log.read_text().splitlines())
    doc = json.loads(out.read_text())
    kernel = doc["evidence"]["accept_counts"]
    if not kernel["available"]:
        pytest.skip(f"the kernel's accept counts were not available: {kernel['why']}")
    assert sum(kernel["counts"].values()) == logged == 600, (kernel, logged)
    assert sum(kernel["empty"].values()) < 50, kernel
    assert (doc["model"]["discipline"], doc["model"]["batch"]) == ("shared", 1), doc["model"]
    assert "(one connection a wakeup, or a few: " in result.output, result.output
