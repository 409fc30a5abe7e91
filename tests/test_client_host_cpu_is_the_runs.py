"""Review P: whose CPU the latency report's 'all CPUs busy ... this run's own' counts.

Client hosts (--clients) that run on this machine's kernel (localhost, tests/cluster.py's network namespaces,
containers) use this machine's CPUs: their drivers' CPU is in its /proc/stat and is the run's own. Since 1262c32
every client host's drivers were dropped (latency's others_cpu_share, ramp's 'seen'); now only those whose
boot_id (what each host's hello reports) differs from this host's.

Saved files edited here (tests/data/v2/latency-hosts.json)."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from test_client_cpu import _step

V2 = Path(__file__).parent / "data" / "v2"
BOOT = "0f4b7b5e-7c1e-4a0f-9d43-6f0d5a1c2b3d"


def _busy_hosts_run(boot_ids: tuple[str, str]) -> dict[str, Any]:
    """The saved cluster run on a machine 50% busy over 100 CPU-s; its workers used 10 CPU-s, each of the
    4 drivers (2 per host) 5 CPU-s; this host's kernel BOOT, its hosts' `boot_ids`."""
    document = copy.deepcopy(json.loads((V2 / "latency-hosts.json").read_text()))
    before = {"cpu_jiffies": {"total": 0, "steal": 0, "busy": 0}, "boot_id": BOOT}
    after = {"cpu_jiffies": {"total": 10_000, "steal": 0, "busy": 5_000}, "boot_id": BOOT}
    document["evidence"]["machine"] = {"before": before, "after": after}
    for counter in document["counters"]:
        counter["cpu_s"] = 5.0
    for host, boot_id in zip(document["hosts"], boot_ids, strict=True):
        host["boot_id"] = boot_id
        for driver in host["drivers"]:
            driver["cpu_s"] = 5.0
    for driver in document["drivers"]:
        driver["cpu_s"] = 5.0
    return document


def _result(document: dict[str, Any]) -> Any:
    from accept_order.experiments.latency.result import LatencyResult

    return LatencyResult.from_dict(document)


def test_a_client_host_on_this_machine_s_kernel_counts_as_the_run_s_own_cpu() -> None:
    elsewhere = _result(_busy_hosts_run(("another-kernel", "yet-another")))
    assert [round(x, 3) for x in elsewhere.others_cpu_share] == [0.5, 0.4]  # the workers' 10% only
    one_here = _result(_busy_hosts_run((BOOT, "another-kernel")))
    assert [h.destination for h in one_here.shared_hosts] == ["c1"]
    assert [round(x, 3) for x in one_here.others_cpu_share] == [0.5, 0.3]  # and c1's 2 drivers' 10%
    both_here = _result(_busy_hosts_run((BOOT, BOOT)))
    assert [round(x, 3) for x in both_here.others_cpu_share] == [0.5, 0.2]


def test_a_file_from_before_boot_id_counts_no_client_host_here() -> None:
    document = _busy_hosts_run(("", ""))
    assert [round(x, 3) for x in _result(document).others_cpu_share] == [0.5, 0.4]
    document = _busy_hosts_run((BOOT, BOOT))
    del document["evidence"]["machine"]["after"]["boot_id"]  # this host's kernel not known: none matches
    assert [round(x, 3) for x in _result(document).others_cpu_share] == [0.5, 0.4]


def test_boot_id_is_kept_in_the_file(tmp_path: Path) -> None:
    from accept_order.core.host_outcome import HostOutcome

    document = _busy_hosts_run((BOOT, ""))
    hosts = [HostOutcome.from_dict(h).to_dict() for h in document["hosts"]]
    assert hosts[0]["boot_id"] == BOOT and "boot_id" not in hosts[1]
    path = tmp_path / "run.json"
    path.write_text(json.dumps(document))
    shown = run_cli(["show", str(path)])
    assert shown.exit_code == 0, shown.stderr
    # c1's drivers are the run's own: 10% workers + 10% c1 of 50% busy, others 30%
    assert "other processes (or interrupts) used 30% of the CPUs, this run's own 20%" in shown.stdout


def test_the_hello_of_a_client_host_names_its_kernel() -> None:
    """What remote_side tells the coordinator: this kernel's boot_id, the one machine_state records."""
    from accept_order.core.environment import machine_state
    from accept_order.loads.hosts import remote_side

    sent: list[Any] = []

    class Channel:
        def send(self, message: Any) -> None:
            sent.append(message)

    assert remote_side._hello(Channel())
    assert sent[0][5] == machine_state()["boot_id"] != ""


def _ramp_step(boot_ids: tuple[str, str]) -> Any:
    """A ramp step over 1 s from two client hosts of one driver each, 0.4 CPU-s apiece, on a machine 98% busy
    of 2 CPUs; its workers 0.05 CPU each."""
    from accept_order.core.driver_stats import DriverStats
    from accept_order.core.histogram import LatencyHistogram
    from accept_order.core.host_outcome import HostOutcome

    driver = DriverStats(index=0, slots=10, requests=50, wall_s=1.0, cpu_s=0.4)
    hosts = tuple(
        HostOutcome(name, LatencyHistogram(), {}, (25, 25), 1.0, drivers=(driver,), boot_id=kernel)
        for name, kernel in zip(("c1", "c2"), boot_ids, strict=True)
    )
    return _step(driver_cpu=0.4, client_cpu_us=8000.0, hosts=hosts)  # test_client_cpu's step otherwise


def test_a_ramp_step_counts_the_drivers_of_client_hosts_on_this_machine_as_its_own() -> None:
    from accept_order.experiments.ramp.step_verdict import signals

    elsewhere = "; ".join(signals(_ramp_step(("another", "yet-another")), workers=2, cpus=2, kernel=BOOT))
    assert "this run's own 5%" in elsewhere  # the workers' 0.1 CPU of 2
    one_here = "; ".join(signals(_ramp_step((BOOT, "another")), workers=2, cpus=2, kernel=BOOT))
    assert "this run's own 25%" in one_here  # and c1's driver, 0.4 CPU
    unknown = "; ".join(signals(_ramp_step((BOOT, BOOT)), workers=2, cpus=2))  # this host's kernel not read
    assert "this run's own 5%" in unknown


def test_client_hosts_on_this_machine_report_its_kernel_through_a_real_load(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Two client hosts as local interpreters (execnet popen in place of ssh, as tests/test_clients_results.py):
    each one's hello carries this kernel's boot_id to its HostOutcome, the file keeps it, and both share."""
    import execnet

    from accept_order.core.hosts import ClientHosts
    from accept_order.core.spec import ConcurrentLoad, ServerSpec
    from accept_order.experiments.documents import load, save
    from accept_order.experiments.session import run_latency
    from accept_order.loads.hosts import gateways

    def popen_spec(destination: str, hosts: ClientHosts, index: int) -> Any:
        return execnet.XSpec(f"popen//id=host{index}//python={sys.executable}")

    monkeypatch.setattr(gateways, "_spec", popen_spec)
    hosts = ClientHosts(("c1", "c2"))
    result = run_latency(ServerSpec(workers=2), ConcurrentLoad(connections=60, concurrency=2, clients=hosts))
    ours = result.evidence["machine"]["after"]["boot_id"]
    assert ours and [h.boot_id for h in result.hosts] == [ours, ours]
    path = tmp_path / "run.json"
    save(path, "latency", result)
    _, document = load(path)  # checked against the file's shape, boot_id included
    again = _result(document)
    assert [h.destination for h in again.shared_hosts] == ["c1", "c2"]
