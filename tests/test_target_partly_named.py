"""A --target some of whose replies name a worker and some do not (a proxy in front of accept-order serve and a
plain page; here one Debian nginx answering 'worker $pid' on an even connection serial and 'hello' on an odd one),
and one none of whose replies do.

latency's per-worker table gave each worker its share of the replies that named one (48 of the 100 named read
'48.0%' where 200 were served, behind HAProxy); now of all it served. run listed the plain replies as '5 of 10
connections failed: 5 x unexpected reply' ('x' in the sequence), and at a plain page 'served nothing', 'Verdict:
nothing served', where the server had answered each; now they are answered naming no worker ('?'), failed 0, and the
refusal says the server answered them. The witness: nginx's access log, a line per request naming what it sent.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import run_cli, wait_for
from nginx_by_hand import nginx_by_hand, one_server_conf

# nginx's $connection: the connection's serial number, consecutive over the run, so both kinds of page come up
CONF = one_server_conf(
    "$sent_body",
    location='return 200 "$sent_body\\n";',
    http=['map $connection $sent_body {{ ~[02468]$ "worker $pid"; default "hello"; }}'],
)


def _logged(log: Path, at_least: int) -> list[str]:
    """The access log's lines once it holds `at_least` (nginx writes a request's line after its reply is sent)."""
    lines = lambda: log.read_text().splitlines() if log.exists() else []  # noqa: E731
    return wait_for(lines, lambda got: len(got) >= at_least, 30, "nginx's access log lines")


def test_latency_shares_are_of_all_served(tmp_path: Path, free_port: int) -> None:
    path = tmp_path / "latency.json"
    with nginx_by_hand(CONF, free_port, workers=2, timeout=30) as nginx:
        args = ["latency", "--target", f"127.0.0.1:{free_port}", "--protocol", "http", "-w", "2", "-n", "40"]
        result = run_cli([*args, "-c", "2", "--json", str(path)])
        assert result.exit_code == 0, result.output
        logged = _logged(nginx.access_log, 40)
    data = json.loads(path.read_text())
    served = sum(n for _, n in data["histogram"]["counts"])
    named = [line for line in logged if line.startswith("worker ")]
    assert served == len(logged) == 40 and 0 < sum(data["served"]) == len(named) < served, (data["served"], logged)
    table = result.stdout.split("served per worker", 1)[1]
    for count in data["served"]:  # each worker's row: its count, and its share of the 40 served
        assert re.search(rf"\b{count}\s+{100 * count / served:.1f}%", table), table
    assert f"{served - len(named)} of the {served} replies named no worker" in result.stdout


def test_run_says_the_server_answered_what_named_no_worker(free_port: int) -> None:
    with nginx_by_hand(CONF, free_port, workers=2, timeout=30) as nginx:
        args = ["run", "--target", f"127.0.0.1:{free_port}", "--protocol", "http", "-w", "2", "-n", "10"]
        result = run_cli(args)
        assert result.exit_code == 0, result.output
        logged = _logged(nginx.access_log, 10)
    plain = sum(1 for line in logged if line == "hello")
    assert len(logged) == 10 and 0 < plain < 10, logged  # nginx answered every one, some naming no worker
    assert f"served {10 - plain} naming a worker, answered naming none {plain}, failed 0, driven 10" in result.stdout
    assert "failed:" not in result.stdout and f"{plain} of 10 connections answered, naming no worker" in result.stdout
    sequence = result.stdout.split("Sequence: ", 1)[1].splitlines()[0].split()
    assert sequence.count("?") == plain and "x" not in sequence, sequence
    said = f"The {plain} answered naming no worker"
    assert said in result.stdout and f"latency --target 127.0.0.1:{free_port} --protocol http' counts" in result.stdout


def test_run_at_a_plain_page_says_answered_not_served_nothing(tmp_path: Path, free_port: int) -> None:
    plain = one_server_conf("$status", location='return 200 "hello\\n";')
    path = tmp_path / "run.json"
    with nginx_by_hand(plain, free_port, workers=2, timeout=30) as nginx:
        args = ["run", "--target", f"127.0.0.1:{free_port}", "--protocol", "http", "-n", "6", "--json", str(path)]
        result = run_cli(args)
        logged = _logged(nginx.access_log, 6)
    saved = json.loads(path.read_text())  # kept before the refusal, its verdict not 'nothing served' either
    assert saved["verdict"]["pattern"] == "not known: no reply named a worker" and len(saved["records"]) == 6
    assert result.exit_code == 1 and logged == ["200"] * 6, (result.output, logged)
    wrote, line = result.stderr.splitlines()  # the file, then the refusal: nothing of run's own (which worker)
    assert wrote == f"wrote {path}" and line.startswith("accept-order: error: "), result.stderr
    assert "served nothing" not in line and "the server answered all 6 connections" in line, line
    assert "Verdict: not known: no reply named a worker" in result.stdout and "failed:" not in result.stdout
    assert "served 0 naming a worker, answered naming none 6, failed 0, driven 6" in result.stdout


def test_a_kept_ramp_step_says_how_many_named_none(tmp_path: Path, free_port: int) -> None:
    """Over kept connections a ramp step's requests per worker are not known where some replies named no worker; it
    said 'no reply named a worker' where half had named one."""
    path = tmp_path / "ramp.json"
    with nginx_by_hand(CONF, free_port, workers=2, timeout=30) as nginx:
        args = ["ramp", "--target", f"127.0.0.1:{free_port}", "--protocol", "http", "-w", "2", "--rates", "100"]
        result = run_cli([*args, "--step", "500ms", "--requests-per-connection", "5", "--json", str(path)])
        assert result.exit_code == 0, result.output
        (step,) = json.loads(path.read_text())["steps"]
        ok = sum(step["served"]) + step["unnamed"]
        logged = _logged(nginx.access_log, ok)
    assert len(logged) == ok and sum(1 for line in logged if line == "hello") == step["unnamed"] > 0, logged
    assert sum(step["served"]) > 0, step["served"]  # some named a worker (a connection's serial is even)
    said = f"requests per worker: not known ({step['unnamed']:,} of the {ok:,} replies named no worker)"
    assert said in result.stdout, result.stdout


def test_a_pool_gives_no_jain_of_the_named_alone(tmp_path: Path, free_port: int) -> None:
    """Over a pool, a worker's requests are those its replies named: the kept table's shares are of all served, and
    no Jain's index of the named alone ('Jain 0.500 over 2 workers', one worker '100.0%', beside 100 unnamed)."""
    path = tmp_path / "pool.json"
    with nginx_by_hand(CONF, free_port, workers=2, timeout=30) as nginx:
        args = ["latency", "--target", f"127.0.0.1:{free_port}", "--protocol", "http", "-w", "2", "--pool"]
        args += ["--requests-per-connection", "0", "-c", "4", "-n", "200", "--driver-procs", "1"]
        result = run_cli([*args, "--json", str(path)])
        assert result.exit_code == 0, result.output
        logged = _logged(nginx.access_log, 200)
    served = json.loads(path.read_text())["served"]
    plain = sum(1 for line in logged if line == "hello")
    assert len(logged) == 200 and 0 < plain == 200 - sum(served), (served, logged)
    kept = result.stdout.split("kept connections per worker", 1)[1].split("pool: ", 1)[0]
    for count in served:  # each worker's row: its requests, and their share of the 200 served
        assert re.search(rf"\b{count}\s+-\s+{100 * count / 200:.1f}%", kept), kept
    assert f"requests: {plain} of the 200 named no worker, so how evenly" in kept and "Jain" not in kept, kept


def test_run_where_some_answered_naming_none_and_others_failed(tmp_path: Path, free_port: int) -> None:
    """Answers naming no worker beside connections closed unanswered (nginx's 444 on an odd serial): still not
    'served nothing', in the line or the file's verdict (either said so where one connection was not such an answer:
    the refusal's rule was every one, as a run Ctrl-C stopped, its last connection aborted, saved it)."""
    close_odd = 'if ($connection ~ "[13579]$") {{ return 444; }} return 200 "hello\\n";'
    conf = one_server_conf("$status", location=close_odd)
    path = tmp_path / "run.json"
    with nginx_by_hand(conf, free_port, workers=2, timeout=30) as nginx:
        args = ["run", "--target", f"127.0.0.1:{free_port}", "--protocol", "http", "-n", "6", "--json", str(path)]
        result = run_cli(args)
        logged = _logged(nginx.access_log, 6)
    answered = logged.count("200")
    assert result.exit_code == 1 and 0 < answered < 6 and logged.count("444") == 6 - answered, logged
    line = result.stderr.splitlines()[-1]
    assert line.startswith("accept-order: error: no reply named a worker: ") and "served nothing" not in line, line
    assert json.loads(path.read_text())["verdict"]["pattern"] == "not known: no reply named a worker"
