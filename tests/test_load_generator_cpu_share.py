"""Review RP of 9e51daa: where the workers' CPU was not read (a server of the remote kind: on this host, or on
another machine, which this host cannot tell apart), the load generator's CPU is still known. 9e51daa said the busy
share alone, 'how much of it was this run's is not known', whenever it reached 10%: a latency --target at a server
elsewhere, whose load generator alone kept the CPUs 45% busy, read 'so waits for a CPU may be others''. Now the
load generator's share is said, the rest left unsplit, and the note comes only where that rest is worth naming."""

from __future__ import annotations

import dataclasses
from typing import Any

from test_client_host_cpu_is_the_runs import _ramp_step, _result
from test_unread_server_cpu_not_split import _remote_here


def _remote(generator_cpu_s: float) -> Any:
    """A run at a server of the remote kind driven from here, on a machine 50% busy over 100 CPU-s, its 4 drivers
    `generator_cpu_s` CPU-s in all."""
    document = _remote_here()
    for driver in document["drivers"]:
        driver["cpu_s"] = generator_cpu_s / len(document["drivers"])
    return _result(document)


def test_the_load_generator_s_share_is_said_beside_the_unsplit_rest() -> None:
    from accept_order.experiments.latency.load_notes import host_notes

    result = _remote(20.0)
    assert result.host_busy_unsplit == (0.5, 0.2)
    (note,) = host_notes([result])
    assert "all CPUs 50% busy host-wide: the load generator used 20% of the CPUs" in note.plain, note.plain
    assert "whose the other 30% was is not known" in note.plain and "this run's own" not in note.plain


def test_no_note_where_the_load_generator_kept_the_cpus_busy() -> None:
    from accept_order.experiments.latency.load_notes import host_notes

    result = _remote(45.0)  # 45 of the 50% busy: the rest, 5%, is no sign of others
    assert result.host_busy_unsplit == (0.5, 0.45)
    assert host_notes([result]) == []


def test_a_ramp_step_without_the_workers_cpu_names_the_load_generator_s_share() -> None:
    from accept_order.experiments.ramp.step_verdict import signals

    step = dataclasses.replace(_ramp_step(("", "")), worker_cpu=(), hosts=())  # driven from here
    seen = "; ".join(signals(step, workers=2, cpus=2))
    # its load generator: 8000 us a connection, 100 connections over 1 s, 0.8 of 2 CPUs
    assert "all CPUs 98% busy host-wide: the load generator used 40% of the CPUs" in seen, seen
    assert "whose the other 58% was is not known" in seen and "this run's own" not in seen


def test_machine_busy_keeps_the_unknown_sentence_where_no_load_generator_ran_here() -> None:
    from accept_order.render.evidence import machine_busy

    text = machine_busy(0.73, 0.0, 2, server_read=False)
    assert (
        text
        == "all CPUs 73% busy host-wide (how much of it was this run's is not known: its server's CPU was not read)"
    )
