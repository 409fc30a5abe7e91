"""burst --repeat ranks no mode where the load generator set every mode's pace.

`burst --modes blocking,reuseport --clients 1000 --repeat 3` (Linux 6.18, 2 vCPUs, load 6-7) marked every cell *: in
each burst the load generator took more than half of it to start the connections (39-90 ms of 57-122 ms). Its verdict
still ranked them ('inconclusive: reuseport was fastest to serve all 1000 clients in 2/3 runs, blocking in 1'): times
that were the generator's. The file is that run's (tests/data/burst_repeat_paced.json). A round where some mode that
served all was the server's pace is still ranked, and the paced ones are counted apart."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

PACED = Path(__file__).parent / "data" / "burst_repeat_paced.json"


def verdict(path: Path) -> str:
    lines = run_cli(["show", str(path)], columns=1000).stdout.splitlines()
    return next(line for line in lines if line.startswith("Verdict, 1000 clients:"))


def test_no_mode_is_ranked_where_the_generator_set_every_pace() -> None:
    said = verdict(PACED)
    assert "fastest" not in said, said
    assert said == (
        "Verdict, 1000 clients: no mode ranked: the load generator set the pace of every mode in each of the 3 runs "
        "(it took more than half of each burst to start the connections, its processes waiting for a CPU 47-93% of "
        "their time and on one 14-37%), so the times are partly its own, not the servers' (give it CPUs of its own: "
        "--load-cpus, or --client-hosts)"
    ), said


def test_a_round_a_server_set_the_pace_of_is_ranked_and_the_others_said_apart(tmp_path: Path) -> None:
    data = json.loads(PACED.read_text())
    blocking = data["rounds"][0][0]["cells"][0]  # 121.5 ms; its connections took the generator 89.9 ms
    for driver in blocking["drivers"]:
        driver["open_s"] = 0.01  # started at once: blocking set its own pace (reuseport, 57.4 ms, still paced)
    path = tmp_path / "burst.json"
    path.write_text(json.dumps(data))
    said = verdict(path)
    assert said.startswith(
        "Verdict, 1000 clients: inconclusive: reuseport was fastest to serve all 1000 clients in 1/3 runs, none in 2; "
        "in 2 of the 3 runs the load generator set the pace of every mode, so they rank none; the quickest other took "
        "2.12 (2.12-2.12)× its time"
    ), said


def test_the_advice_follows_what_the_generator_did_with_its_time(tmp_path: Path) -> None:
    """The generator that paced these bursts was not CPU-bound: its processes were on a CPU 14-37% of their time
    and waited for one 47-93% (its own clocks: cpu_s, runqueue_s), so 'give it more --driver-procs' (latency's
    advice for a CPU-bound generator) would add processes to wait for the same 2 CPUs. It is told to get CPUs of
    its own; a generator on a CPU all the time is told to get more processes (the review of 9938aab)."""
    said = verdict(PACED)
    assert "--driver-procs" not in said, said
    assert said.endswith(
        "(it took more than half of each burst to start the connections, its processes waiting for a CPU 47-93% of "
        "their time and on one 14-37%), so the times are partly its own, not the servers' (give it CPUs of its own: "
        "--load-cpus, or --client-hosts)"
    ), said
    data = json.loads(PACED.read_text())
    for row in data["rounds"]:
        for run in row:
            for driver in run["cells"][0]["drivers"]:
                driver.update(cpu_s=0.97 * driver["wall_s"], runqueue_s=0.0)  # on a CPU all the time
    path = tmp_path / "burst.json"
    path.write_text(json.dumps(data))
    said = verdict(path)
    assert said.endswith(
        "(it took more than half of each burst to start the connections, a process of it on a CPU up to 97% of its "
        "time), so the times are partly its own, not the servers' (give it more --driver-procs, or CPUs of its own "
        "with --load-cpus)"
    ), said


def test_a_mode_that_lost_clients_is_not_said_to_have_been_paced(tmp_path: Path) -> None:
    """A third mode that lost clients in each round is no part of what the generator paced (it served not all, so
    ranks nowhere): the verdict says the pace of every mode that served them all, not of every mode."""
    data = json.loads(PACED.read_text())
    for row in data["rounds"]:
        lost = json.loads(json.dumps(row[0]))
        lost["server"]["mode"] = "accept-mutex"
        lost["cells"][0]["errors"] = {"timeout": 7}
        row.append(lost)
    path = tmp_path / "burst.json"
    path.write_text(json.dumps(data))
    said = verdict(path)
    assert said.startswith(
        "Verdict, 1000 clients: no mode ranked: the load generator set the pace of every mode that served all 1000 "
        "clients in each of the 3 runs ("
    ), said
    for driver in data["rounds"][0][0]["cells"][0]["drivers"]:
        driver["open_s"] = 0.01  # blocking set its own pace in the first round: that round ranks
    path.write_text(json.dumps(data))
    said = verdict(path)
    assert "; in 2 of the 3 runs the load generator set the pace of every mode that served all 1000 clients, so " in (
        said
    ), said
