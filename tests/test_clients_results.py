"""Loads from client hosts (--clients) as results: what each host drove adds up to the run's figures exactly, the
hosts travel through files (JSON, show, CSV, merge) and every host field of a file is checked on load.

The client hosts here are execnet "popen" gateways standing in for ssh (the same engine, a local interpreter per
"host"): what is tested is what the results make of the hosts, not ssh (tests/test_clients_cli.py has a run over
a real cluster of namespaces with sshd).
"""

from __future__ import annotations

import copy
import csv
import io
import json
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import execnet
import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.core.histogram import LatencyHistogram
from accept_order.core.hosts import ClientHosts
from accept_order.core.spec import ConcurrentLoad, ServerSpec
from accept_order.experiments.burst.result import BurstResult
from accept_order.experiments.burst.run import BurstPlan, run_bursts
from accept_order.experiments.documents import load, save
from accept_order.experiments.latency.result import LatencyResult
from accept_order.experiments.ramp.plan import RampPlan
from accept_order.experiments.ramp.result import RampResult
from accept_order.experiments.ramp.run import run_ramp
from accept_order.experiments.session import run_latency
from accept_order.loads.hosts import gateways

V2 = Path(__file__).parent / "data" / "v2"
HOSTS = ClientHosts(("c1", "c2"))
CONNECTIONS = 600


def popen_spec(destination: str, hosts: ClientHosts, index: int) -> Any:
    """A local interpreter in place of ssh to `destination`: the same engine, no sshd needed."""
    return execnet.XSpec(f"popen//id=host{index}//python={sys.executable}")


@pytest.fixture(scope="module")
def popen_hosts() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gateways, "_spec", popen_spec)
        yield


@pytest.fixture(scope="module")
def latency(popen_hosts: None) -> LatencyResult:
    load = ConcurrentLoad(connections=CONNECTIONS, concurrency=6, driver_procs=1, clients=HOSTS)
    return run_latency(ServerSpec(workers=2), load)


@pytest.fixture(scope="module")
def saved(latency: LatencyResult, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hosts") / "latency.json"
    save(path, "latency", latency)
    return path


def counts(histogram: LatencyHistogram) -> Counter[int]:
    return Counter({us: n for us, n in histogram.to_dict()["counts"]})


def test_every_connection_is_served_or_failed_and_each_host_drove_its_share(latency: LatencyResult) -> None:
    assert latency.ok + latency.failed == latency.driven == CONNECTIONS
    assert [h.destination for h in latency.hosts] == ["c1", "c2"]
    assert [h.driven for h in latency.hosts] == [CONNECTIONS // 2] * 2  # the split: as even as it goes
    assert all(h.lost is None for h in latency.hosts)


def test_the_hosts_add_up_to_the_run_exactly(latency: LatencyResult) -> None:
    """Per worker, by errno and bucket by bucket: the merged figures are the hosts' added, none lost or doubled."""
    per_worker = tuple(sum(h.served[w] for h in latency.hosts) for w in range(latency.server.workers))
    assert per_worker == latency.served and sum(per_worker) == latency.ok
    assert sum((counts(h.histogram) for h in latency.hosts), Counter()) == counts(latency.histogram)
    assert sum((Counter(h.errors) for h in latency.hosts), Counter()) == Counter(latency.errors)


def test_each_host_measured_its_clock_and_its_start(latency: LatencyResult) -> None:
    for host in latency.hosts:
        assert host.offset_s is not None and host.uncertainty_s is not None and host.uncertainty_s >= 0
        assert host.started_s is not None and host.ended_s is not None and host.ended_s >= host.started_s
        assert host.drivers and host.client_cpu_us is not None


def test_a_file_keeps_the_hosts_and_show_prints_their_table(latency: LatencyResult, saved: Path) -> None:
    kind, document = load(saved)
    again = LatencyResult.from_dict(document)
    assert again.hosts == latency.hosts and again.load.clients == HOSTS
    result = run_cli(["show", str(saved)])
    assert result.exit_code == 0, result.output
    table = result.stdout.split("per client host", 1)[1]
    for host in latency.hosts:
        row = next(line.split() for line in table.splitlines() if line.split()[:1] == [host.destination])
        assert row[1:3] == [str(host.ok), str(host.failed)]
    assert "on each of 2 client hosts (c1, c2)" in result.stdout


def test_the_csv_hosts_table_has_a_row_per_host(latency: LatencyResult, saved: Path) -> None:
    result = run_cli(["show", str(saved), "--format", "csv", "--table", "hosts"])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["host"] for r in rows] == ["c1", "c2"]
    assert sum(int(r["served"]) for r in rows) == latency.ok
    assert [r["served_per_worker"] for r in rows] == [" ".join(map(str, h.served)) for h in latency.hosts]


def test_a_file_without_hosts_reads_as_before() -> None:
    kind, document = load(V2 / "latency.json")
    result = LatencyResult.from_dict(document)
    assert result.hosts == () and "hosts" not in result.to_dict() and result.load.clients is None
    table = run_cli(["show", str(V2 / "latency.json"), "--format", "csv", "--table", "hosts"])
    assert table.exit_code == 0 and len(table.stdout.splitlines()) == 1  # its header only


def _document(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def _show_refuses(document: dict[str, Any], tmp_path: Path, *fragments: str) -> None:
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(document))
    assert_one_error_line(run_cli(["show", str(path)]), 1, *fragments)


def test_hosts_that_do_not_add_up_to_the_run_are_refused(saved: Path, tmp_path: Path) -> None:
    document = _document(saved)
    one_more = copy.deepcopy(document)  # a host holding a sample the run does not
    one_more["hosts"][0]["histogram"]["counts"][0][1] += 1
    one_more["hosts"][0]["served_total"] += 1
    _show_refuses(one_more, tmp_path, "hosts", "not the run's")
    failed = copy.deepcopy(document)
    failed["hosts"][1]["failed"] = {"ECONNREFUSED": 1}
    _show_refuses(failed, tmp_path, "hosts", "failures")
    total = copy.deepcopy(document)
    total["hosts"][0]["served_total"] += 1
    _show_refuses(total, tmp_path, "hosts[0].served_total")
    twice = copy.deepcopy(document)
    twice["hosts"][1]["destination"] = "c1"
    _show_refuses(twice, tmp_path, "hosts[1].destination")
    wide = copy.deepcopy(document)
    wide["hosts"][0]["served"] = [*wide["hosts"][0]["served"], 0]
    _show_refuses(wide, tmp_path, "hosts[0].served")
    moved = copy.deepcopy(document)  # the same total, on other workers than the run counted
    moved["hosts"][0]["served"][0] += 1
    moved["hosts"][0]["served"][1] -= 1
    _show_refuses(moved, tmp_path, "hosts", "per-worker")


WRONG: tuple[Any, ...] = (None, "", "x", True, -1, 0.5, 1e30, 10**30, [], {}, {"a": 1})


def _leaves(value: Any, at: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    yield at
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*at, key))
    elif isinstance(value, list) and value:
        yield from _leaves(value[0], (*at, 0))


def _first_part(document: dict[str, Any]) -> dict[str, Any]:
    """The first load of a document that has hosts: a latency run, a burst's first cell, a ramp's first step."""
    run = document["runs"][0] if "runs" in document else document
    return run["cells"][0] if "cells" in run else run["steps"][0] if "steps" in run else run


@pytest.mark.parametrize("fixture", ["latency-hosts", "burst-hosts", "ramp-hosts"])
def test_every_host_field_mutated_is_shown_or_one_line(fixture: str, tmp_path: Path) -> None:
    """Each field of a saved host (its first's, in the fixture of each kind), set to each wrong value or
    removed: `show` prints it or refuses with one line, exit 1; never a traceback."""
    text = (V2 / f"{fixture}.json").read_text()
    document = json.loads(text)
    refused = 0
    for at in _leaves(_first_part(document)["hosts"], ()):
        for wrong in (*WRONG, ...):
            if wrong is ... and (not at or isinstance(at[-1], int)):
                continue  # only an object's field can be missing
            edited = json.loads(text)  # a fresh copy, parsed in C (copy.deepcopy took a fifth of the test)
            parent: Any = _first_part(edited)
            for key in ("hosts", *at)[:-1]:
                parent = parent[key]
            if wrong is ...:
                del parent[("hosts", *at)[-1]]
            else:
                parent[("hosts", *at)[-1]] = wrong
            path = tmp_path / "mutated.json"
            path.write_text(json.dumps(edited))
            result = run_cli(["show", str(path)])
            if result.exit_code:
                assert_one_error_line(result, 1)
                refused += 1
    assert refused, "no mutation was refused: the test tests nothing"


def _sibling(document: dict[str, Any], when: str) -> dict[str, Any]:
    """The same experiment measured at another time (as the merge's double-count check tells them apart)."""
    other = copy.deepcopy(document)
    other["environment"]["started_at"] = when
    return other


def test_merge_adds_the_hosts_per_destination(saved: Path, tmp_path: Path, latency: LatencyResult) -> None:
    other = tmp_path / "other.json"
    other.write_text(json.dumps(_sibling(_document(saved), "2000-01-01T00:00:00+00:00")))
    merged = tmp_path / "merged.json"
    result = run_cli(["merge", str(saved), str(other), "--concurrent", "--json", str(merged)])
    assert result.exit_code == 0, result.output
    both = LatencyResult.from_dict(load(merged)[1])
    assert [h.destination for h in both.hosts] == ["c1", "c2"]
    for mine, added in zip(latency.hosts, both.hosts, strict=True):
        assert counts(added.histogram) == counts(mine.histogram) + counts(mine.histogram)
        assert added.served == tuple(2 * n for n in mine.served)
    assert sum((counts(h.histogram) for h in both.hosts), Counter()) == counts(both.histogram)


def test_merge_names_every_host_of_files_from_different_hosts(saved: Path, tmp_path: Path) -> None:
    renamed = _sibling(_document(saved), "2000-01-01T00:00:00+00:00")
    for host, name in zip(renamed["hosts"], ("c3", "c4"), strict=True):
        host["destination"] = name
    renamed["load"]["clients"]["destinations"] = ["c3", "c4"]
    other = tmp_path / "other.json"
    other.write_text(json.dumps(renamed))
    merged = tmp_path / "merged.json"
    assert run_cli(["merge", str(saved), str(other), "--concurrent", "--json", str(merged)]).exit_code == 0
    both = LatencyResult.from_dict(load(merged)[1])
    assert [h.destination for h in both.hosts] == ["c1", "c2", "c3", "c4"]
    assert both.load.clients is not None and both.load.clients.destinations == ("c1", "c2", "c3", "c4")


def test_merge_with_a_file_driven_from_one_host_keeps_no_hosts(saved: Path, tmp_path: Path) -> None:
    here = _sibling(_document(saved), "2000-01-01T00:00:00+00:00")
    del here["hosts"], here["load"]["clients"]
    other = tmp_path / "other.json"
    other.write_text(json.dumps(here))
    merged = tmp_path / "merged.json"
    for first, second in ((saved, other), (other, saved)):
        assert run_cli(["merge", str(first), str(second), "--json", str(merged)]).exit_code == 0
        both = load(merged)[1]
        assert "hosts" not in both and "clients" not in both["load"], (first.name, second.name)
        assert LatencyResult.from_dict(both).ok == 2 * CONNECTIONS


def test_a_burst_over_client_hosts_keeps_each_cells_hosts(popen_hosts: None) -> None:
    plan = BurstPlan(clients=(40, 80), driver_procs=1, client_hosts=HOSTS)
    run = run_bursts(ServerSpec(workers=2), plan)
    for cell in run.cells:
        assert [h.destination for h in cell.hosts] == ["c1", "c2"]
        assert sum(h.driven for h in cell.hosts) == cell.driven == cell.clients
        assert tuple(sum(h.served[w] for h in cell.hosts) for w in range(2)) == cell.served
    again = BurstResult.from_dict(json.loads(json.dumps(BurstResult((run,)).to_dict())))
    assert again.runs[0].cells == run.cells


def test_a_ramp_over_client_hosts_keeps_each_steps_hosts(popen_hosts: None) -> None:
    plan = RampPlan(rates=(150.0,), step_s=0.3, in_flight=20, driver_procs=1, keep_going=True, client_hosts=HOSTS)
    result = run_ramp(ServerSpec(workers=2), plan)
    (step,) = result.steps
    assert [h.destination for h in step.hosts] == ["c1", "c2"]
    assert sum(h.driven for h in step.hosts) == step.driven
    assert tuple(sum(h.served[w] for h in step.hosts) for w in range(2)) == step.served
    assert result.plan["client_hosts"]["destinations"] == ["c1", "c2"]
    again = RampResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again.steps == result.steps


def test_each_host_says_which_loop_its_drivers_ran(saved: Path, tmp_path: Path) -> None:
    """Each host decides "auto" for itself: the table and the CSV say which loop each ran (the run's line
    alone said "drivers on epoll and io_uring")."""
    document = json.loads(saved.read_text())
    for host, loop in zip(document["hosts"], ["io_uring", "epoll"], strict=True):
        for driver in host["drivers"]:
            driver["loop"] = loop
    for driver, loop in zip(document["drivers"], ["io_uring", "epoll"], strict=True):  # the run's: every host's
        driver["loop"] = loop
    path = tmp_path / "apart.json"
    path.write_text(json.dumps(document))
    shown = run_cli(["show", str(path)])
    assert shown.exit_code == 0, shown.output
    header, *lines = [line for line in shown.stdout.split("per client host", 1)[1].splitlines() if line.strip()]
    assert "loop" in header.split(), header
    rows = {line.split()[0]: line.split() for line in lines if line.split()[:1] in (["c1"], ["c2"])}
    assert "io_uring" in rows["c1"] and "epoll" not in rows["c1"] and "epoll" in rows["c2"], rows
    table = run_cli(["show", str(path), "--format", "csv", "--table", "hosts"])
    assert [r["loop"] for r in csv.DictReader(io.StringIO(table.stdout))] == ["io_uring", "epoll"]
    summary = run_cli(["show", str(path), "--format", "csv", "--table", "summary"])
    assert [r["loop"] for r in csv.DictReader(io.StringIO(summary.stdout))] == ["epoll and io_uring"]
