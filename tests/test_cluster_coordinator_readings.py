"""Readings of a run loaded from client hosts (--clients) that described the coordinator, and per-host tables
(a user-tester's 3-client cluster, found in this session's G round):

1. burst --client-hosts stopped by Ctrl-C: its per-host table said '1500 (1500 aborted)' under '3000 under way
   at the stop'; ramp's the same of a step cut short (latency's said it apart since 7be185c).
2. ramp --clients at a --target: 'overflows', 'host CPUs', the per-step sockets and nstat and the 'seen' line
   were the coordinator's, a host none of the run's connections crossed.
3. latency --clients: the model said 'the load generator shared the workers' CPUs (... --load-cpus gives it its
   own)' of drivers on other hosts, and 'this run's own' CPU counted their CPU as this host's.
4. plot of a cluster run: a lost host read 'from c2: nothing served' though it served 3,207 before it was lost;
   the footer said 'no work' of a --target server and not where the load came from.
5. --target's 'Missing: ... observe's evidence' note stood beside the evidence --observe-on brought.

Saved files edited here (tests/data/v2's cluster runs, and a real stopped burst at a --target from this round)."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from rich.console import Console

DATA = Path(__file__).parent / "data"
V2 = DATA / "v2"
REMOTE = {
    "mode": "remote",
    "server": "remote",
    "workers": 2,
    "host": "192.0.2.10",
    "port": 8080,
    "work_us": 0,
    "work_iters": 0,
    "backlog": 511,
    "accept_batch": 0,
    "cpus": [],
    "attach": [],
    "protocol": "line",
    "policy": "round-robin",
    "mutex_delay_ms": 500.0,
    "maxconn": 0,
    "in_flight": 0,
}
# what --observe-on brought from the server's host for one load (a real ramp step's, trimmed to two workers)
OBSERVED = {
    "host": "server",
    "program": "python",
    "traced": True,
    "source": "counted by the kernel (bpftrace on the accept tracepoints, per thread)",
    "wall_s": 4.358,
    "mechanism": "epoll",
    "workers": [
        {"pid": 24599, "tid": None, "accepts": 82, "served_by_replies": 82, "cpu_s": 0.17},
        {"pid": 24600, "tid": None, "accepts": 68, "served_by_replies": 68, "cpu_s": 0.06},
    ],
    "agrees": True,
    "notes": [],
    "counters": {"TcpExtListenOverflows": 7, "TcpExtListenDrops": 7, "TcpExtTCPReqQFullDrop": 0},
}


def _saved(tmp_path: Path, name: str, document: dict[str, Any]) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return path


def _shown(path: Path) -> str:
    result = run_cli(["show", str(path)], columns=300)
    assert result.exit_code == 0, result.output
    return result.stdout


def _host_rows(shown: str, host: str) -> list[str]:
    return [line for line in shown.splitlines() if f"  {host}  " in line or line.lstrip().startswith(f"{host} ")]


# --- 1. per-host tables of a load cut short


def test_a_stopped_cluster_burst_s_hosts_say_its_aborted_connections_were_under_way(tmp_path: Path) -> None:
    """A real burst --client-hosts c1,c2 --target ... --clients 3000 stopped 0.4 s in: each host's 1,500 were
    the stop's, as the burst's own line says ('3000 under way at the stop')."""
    shown = _shown(_saved(tmp_path, "burst.json", json.loads((DATA / "cluster_burst_stopped.json").read_text())))
    assert "3000 under way at the stop" in shown
    rows = _host_rows(shown, "c1") + _host_rows(shown, "c2")
    assert len(rows) == 2 and all(" 0; 1500 under way " in row for row in rows), rows
    assert "aborted)" not in shown, shown


def test_a_cluster_burst_at_a_target_says_whose_its_kernel_counters_are(tmp_path: Path) -> None:
    document = json.loads((DATA / "cluster_burst_stopped.json").read_text())
    document["runs"][0]["cells"][0]["counters"] = {"TcpExtListenOverflows": 5}
    shown = _shown(_saved(tmp_path, "burst.json", document))
    assert "this host's, which only coordinated: ListenOverflows +5" in shown, shown
    for cell in document["runs"][0]["cells"]:  # the same burst driven from this host: the counters are the load's
        cell["hosts"] = []
    assert "only coordinated" not in _shown(_saved(tmp_path, "here.json", document))


def _ramp(stopped: bool) -> dict[str, Any]:
    ramp = json.loads((V2 / "ramp-hosts.json").read_text())
    last = ramp["steps"][-1]
    last["interrupted"] = stopped
    last["errors"] = {"aborted": 9}
    for host in last["hosts"]:
        host["failed"] = {"aborted": 4 if host["destination"] == "c1" else 5}
    ramp["interrupted"] = stopped
    return ramp


def test_a_ramp_step_cut_short_says_its_hosts_aborted_connections_apart(tmp_path: Path) -> None:
    shown = _shown(_saved(tmp_path, "ramp.json", _ramp(stopped=True)))
    assert " 0; 4 under way " in shown and " 0; 5 under way " in shown, shown
    assert "(4 aborted)" not in shown
    # the ramp's own table: the step's row fails none, and the stop's are said under it
    row = next(line for line in shown.splitlines() if line.lstrip().startswith("400/s") and "interrupted" in line)
    assert row.split()[5] == "0", row
    assert "400/s: 9 connections under way at the stop (aborted by it: neither failed nor served)" in shown
    # a step that ran to its end keeps aborted among its failures
    whole = _shown(_saved(tmp_path, "whole.json", _ramp(stopped=False)))
    assert " 4 (4 aborted) " in whole and "under way" not in whole, whole


def test_a_sweep_cap_cut_short_says_its_hosts_aborted_connections_apart(tmp_path: Path) -> None:
    latency, sweep = json.loads((V2 / "latency-hosts.json").read_text()), json.loads((V2 / "sweep.json").read_text())
    run = {k: v for k, v in latency.items() if k in sweep["runs"][0] or k == "hosts"}
    run.update(interrupted=True, errors={"aborted": 9})
    for host in run["hosts"]:
        host["failed"] = {"aborted": 4 if host["destination"] == "c1" else 5}
    document = {**{k: sweep[k] for k in ("schema", "version", "kind", "tool")}, "runs": [run]}
    shown = _shown(_saved(tmp_path, "sweep.json", document))
    assert " 0; 4 under way " in shown and " 0; 5 under way " in shown and "aborted)" not in shown, shown


# --- 2. a cluster ramp's host readings


def _coordinated_ramp(observed: bool) -> dict[str, Any]:
    """The v2 cluster ramp as if its server had been elsewhere (--target): no worker CPU or queues seen; the
    coordinator's counters moved (others' traffic) and its CPUs were busy."""
    ramp = json.loads((V2 / "ramp-hosts.json").read_text())
    ramp["server"] = dict(REMOTE)
    for step in ramp["steps"]:
        step.update(worker_cpu=[], queues=[], machine_cpu=0.97, seen=[])
        step["counters"] = {"TcpExtListenOverflows": 31, "TcpEstabResets": 6}
        if observed:
            step["observed_on"] = [copy.deepcopy(OBSERVED)]
    return ramp


def _table_rows(shown: str) -> list[str]:
    return [line for line in shown.splitlines() if line.lstrip().startswith(("200/s", "400/s")) and "held" in line]


def test_a_ramp_that_only_coordinated_leaves_this_host_s_readings_out_of_its_table(tmp_path: Path) -> None:
    shown = _shown(_saved(tmp_path, "ramp.json", _coordinated_ramp(observed=False)))
    rows = _table_rows(shown)
    assert len(rows) == 2, shown
    for row in rows:  # overflows, max Recv-Q, workers CPU, host CPUs: none of them the run's
        assert row.split()[-5:-1] == ["-", "-", "-", "-"], row
    assert "which only coordinated (the load went from the client hosts to the server)" in shown
    assert "both host-wide" not in shown


def test_a_ramp_that_only_coordinated_takes_its_overflows_from_the_server_s_host(tmp_path: Path) -> None:
    shown = _shown(_saved(tmp_path, "ramp.json", _coordinated_ramp(observed=True)))
    for row in _table_rows(shown):
        assert row.split()[-5:-1] == ["7", "-", "-", "-"], row  # observe's ListenOverflows, not this host's 31
    assert "the table's overflows are the server's network namespace's, as --observe-on read them there" in shown


def test_a_ramp_with_the_server_here_says_its_readings_are_the_server_s_host_s(tmp_path: Path) -> None:
    ramp = json.loads((V2 / "ramp-hosts.json").read_text())
    shown = _shown(_saved(tmp_path, "ramp.json", ramp))
    assert "both host-wide, of this host: the server's (the load came from the client hosts)" in shown
    assert any(row.split()[-2] == "100%" for row in _table_rows(shown)), shown  # its host CPUs kept


def test_a_step_that_only_coordinated_sees_the_server_s_counters_not_this_host_s() -> None:
    from accept_order.experiments.ramp.result import RampStep
    from accept_order.experiments.ramp.step_verdict import signals

    ramp = _coordinated_ramp(observed=False)
    step = RampStep.from_dict(ramp["steps"][0])
    assert signals(step, 2, 2, coordinated=True) == []  # this host's overflows, resets and busy CPUs
    here = signals(step, 2, 2)
    assert any("overflowed 31 times" in s for s in here) and any("busy host-wide" in s for s in here), here
    observed = RampStep.from_dict(_coordinated_ramp(observed=True)["steps"][0])
    assert signals(observed, 2, 2, coordinated=True) == ["the accept queue overflowed 7 times"]


# --- 3. latency's CPU readings of drivers on client hosts


def _latency() -> dict[str, Any]:
    return json.loads((V2 / "latency-hosts.json").read_text())


def _result(document: dict[str, Any]) -> Any:
    from accept_order.experiments.latency.result import LatencyResult

    return LatencyResult.from_dict(document)


def _busy_machine(document: dict[str, Any], drivers_s: float) -> dict[str, Any]:
    """The host's ticks over the run: 100 CPU-s, 50 busy; the workers used 10 CPU-s; each host's drivers
    `drivers_s` (the run's top-level drivers are the hosts' together)."""
    document = copy.deepcopy(document)
    ticks = {"before": {"cpu_jiffies": {"total": 0, "steal": 0, "busy": 0}}}
    ticks["after"] = {"cpu_jiffies": {"total": 10_000, "steal": 0, "busy": 5_000}}
    document["evidence"]["machine"] = ticks
    for counter in document["counters"]:
        counter["cpu_s"] = 5.0
    for driver in document["drivers"]:
        driver["cpu_s"] = drivers_s
    return document


def test_the_run_s_own_cpu_is_this_host_s_workers_not_the_client_hosts_drivers() -> None:
    document = _busy_machine(_latency(), drivers_s=5.0)
    busy, others = _result(document).others_cpu_share
    assert (busy, round(others, 3)) == (0.5, 0.4), (busy, others)  # 50% busy, the workers' 10% of it
    del document["hosts"]  # the same drivers on this host: theirs counts as the run's own
    busy, others = _result(document).others_cpu_share
    assert round(others, 3) == 0.4 - 0.05 * len(document["drivers"]), others


def test_a_host_that_only_coordinated_says_nothing_of_its_cpus() -> None:
    document = _busy_machine(_latency(), drivers_s=0.0)
    document["server"] = dict(REMOTE)
    assert _result(document).others_cpu_share is None  # a file from before the flag too
    document["evidence"]["traffic_elsewhere"] = True
    assert _result(document).others_cpu_share is None


def test_the_model_says_drivers_on_client_hosts_waited_for_their_cpus_not_the_workers() -> None:
    from accept_order.experiments.latency.besides_queueing import seen_besides_queueing

    document = _latency()
    for driver in document["drivers"]:  # 10% of its time waiting for a CPU: between CLIENT_WAIT and STARVED
        driver["runqueue_s"] = round(driver["wall_s"] * 0.1, 6)
    seen = " ".join(seen_besides_queueing(_result(document)))
    assert (
        "the load generator ran on CPUs of its client hosts during epoll (it waited for one 10% of its time)" in seen
    ), seen
    assert "--load-cpus" not in seen and "shared the workers' CPUs" not in seen
    del document["hosts"]
    assert "shared the workers' CPUs during epoll" in " ".join(seen_besides_queueing(_result(document)))


def test_a_client_bound_cluster_run_is_not_told_to_use_load_cpus(tmp_path: Path) -> None:
    """Drivers on client hosts on a CPU all the time while this host's workers idled: more client hosts give
    them CPU; --load-cpus places only this host's load generator."""
    document = _latency()
    for driver in document["drivers"]:
        driver["cpu_s"] = driver["wall_s"]
    for counter in document["counters"]:
        counter["cpu_s"] = 0.0001
    shown = _shown(_saved(tmp_path, "bound.json", document))
    assert "the server waited for its client" in shown and "or more client hosts)" in shown, shown
    assert "--load-cpus" not in shown
    del document["hosts"]
    assert "CPUs of its own with --load-cpus)" in _shown(_saved(tmp_path, "here.json", document))


# --- 4. the picture of a cluster run


def _labels_and_footer(document: dict[str, Any]) -> tuple[list[str], str]:
    from accept_order.experiments.documents import plot_document

    fig = plot_document("latency", document)
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    return labels, fig.get_supxlabel()


@pytest.fixture(scope="module")
def matplotlib() -> Any:
    return pytest.importorskip("matplotlib")


def test_a_lost_host_s_legend_says_it_was_lost_and_why(matplotlib: Any) -> None:
    document = _latency()
    lost = document["hosts"][1]
    lost.update(served=[0] * len(lost["served"]), served_total=0, histogram={"unit": "us", "counts": []})
    lost.update(drivers=[], wall_s=0.0, ended_s=None, started_s=None)
    lost["lost"] = "its connection closed after at least 3207 connections (3207 served by its last report)"
    labels, _ = _labels_and_footer(document)
    said = [label for label in labels if label.startswith(f"from {lost['destination']}: ")]
    assert said == [
        f"from {lost['destination']}: lost: its connection closed after at least 3207 connections (3207 served by "
        "its last report); none of its durations are in the figures"
    ], labels


def test_the_footer_of_a_cluster_run_at_a_target_says_the_server_s_own_work_and_whence(matplotlib: Any) -> None:
    document = _latency()
    _, footer = _labels_and_footer(document)
    assert "no work" in footer and " in flight from 2 client hosts" in footer, footer
    document["server"] = dict(REMOTE)
    _, footer = _labels_and_footer(document)
    assert "the server's own work" in footer and "no work" not in footer, footer
    document["load"] = {**document["load"], "rate": 500.0}
    _, footer = _labels_and_footer(document)
    assert "at most " in footer, footer  # an open loop keeps up to -c in flight


# --- 5. the --target note beside --observe-on's evidence


MISSING = "observe's evidence (--observe-on runs observe on its host)"
BROUGHT = "observe on its host (--observe-on, below) counted each worker's accepts and CPU"


def test_the_target_note_says_what_observe_brought_in_a_latency_run(tmp_path: Path) -> None:
    document = _latency()
    document["server"] = dict(REMOTE)
    for counter in document["counters"]:
        counter["cpu_s"] = None
    shown = _shown(_saved(tmp_path, "bare.json", document))
    assert MISSING in shown and BROUGHT not in shown
    document["evidence"]["observed_on"] = [copy.deepcopy(OBSERVED)]
    shown = _shown(_saved(tmp_path, "observed.json", document))
    assert BROUGHT in shown and MISSING not in shown, shown


def test_the_target_note_says_what_observe_brought_in_a_ramp(tmp_path: Path) -> None:
    assert MISSING in _shown(_saved(tmp_path, "bare.json", _coordinated_ramp(observed=False)))
    shown = _shown(_saved(tmp_path, "observed.json", _coordinated_ramp(observed=True)))
    assert BROUGHT in shown and MISSING not in shown, shown


def test_the_target_note_says_what_observe_brought_in_a_burst() -> None:
    from accept_order.experiments.burst.report import burst_report
    from accept_order.experiments.burst.result import BurstResult

    document = json.loads((DATA / "cluster_burst_stopped.json").read_text())

    def said(doc: dict[str, Any]) -> str:
        console = Console(width=300, record=True, file=io.StringIO())
        console.print(burst_report(BurstResult.from_dict(doc)))
        return console.export_text()

    assert MISSING in said(document)
    for cell in document["runs"][0]["cells"]:
        cell["observed_on"] = [copy.deepcopy(OBSERVED)]
    shown = said(document)
    assert BROUGHT in shown and MISSING not in shown, shown
