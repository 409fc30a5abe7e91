"""Review RP of 9a39ce7: run_ramp's passing of this machine's boot_id to each step's 'seen' (signals' `kernel`),
which its commit left unexercised without a cluster. A real ramp from two client hosts as local interpreters
(execnet popen in place of ssh, as tests/test_clients_results.py): both report this kernel, and the step's
load generator's CPU on this machine's CPUs (_client_cpus) is their drivers', where without the boot_id it was 0."""

from __future__ import annotations

import sys
from typing import Any

import pytest


def test_a_ramp_from_client_hosts_on_this_machine_counts_their_drivers_as_this_machine_s(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import execnet

    from accept_order.core.environment import boot_id
    from accept_order.core.hosts import ClientHosts
    from accept_order.core.spec import ServerSpec
    from accept_order.experiments.ramp import run as ramp_run
    from accept_order.experiments.ramp import step_verdict
    from accept_order.loads.hosts import gateways

    def popen_spec(destination: str, hosts: ClientHosts, index: int) -> Any:
        return execnet.XSpec(f"popen//id=host{index}//python={sys.executable}")

    said: list[tuple[Any, str]] = []
    signals = ramp_run.signals

    def kept_signals(step: Any, *args: Any, **kwargs: Any) -> list[str]:
        said.append((step, kwargs.get("kernel", "")))
        return signals(step, *args, **kwargs)

    monkeypatch.setattr(gateways, "_spec", popen_spec)
    monkeypatch.setattr(ramp_run, "signals", kept_signals)
    hosts = ClientHosts(("c1", "c2"))
    plan = ramp_run.RampPlan(
        rates=(150.0,), step_s=0.3, in_flight=20, driver_procs=1, keep_going=True, client_hosts=hosts
    )
    ramp_run.run_ramp(ServerSpec(workers=2), plan)
    ((step, kernel),) = said
    assert kernel == boot_id() != ""
    assert [h.boot_id for h in step.hosts] == [kernel, kernel]
    drivers_cpu = sum(d.cpu_s for h in step.hosts for d in h.drivers)
    assert drivers_cpu > 0
    assert step_verdict.client_cpus(step, kernel) == pytest.approx(drivers_cpu / step.wall_s)
