"""A server elsewhere (--target) is known by its replies alone: its workers' context switches cannot be read from
here, so its table's sleeps are '-' and no legend may say whose switches they are ('each worker's main thread
alone' was printed under a column of dashes: docs/howto/cluster.md)."""

from __future__ import annotations

from pathlib import Path

from conftest import run_cli

from accept_order.core.spec import ServerSpec
from accept_order.experiments.sleeps_legend import sleeps_of

SAVED = Path(__file__).parent / "data" / "merge_target_a.json"  # a real latency --target run (two workers)


def test_a_server_elsewhere_has_no_sleeps_to_explain() -> None:
    assert sleeps_of(ServerSpec(kind="remote", mode="remote", host="127.0.0.1", port=8080)) is None


def test_its_latency_report_prints_no_sleeps_legend() -> None:
    result = run_cli(["show", str(SAVED)])
    assert result.exit_code == 0, result.output
    table = [line for line in result.stdout.splitlines() if line.split()[:2] == ["worker", "pid"]]
    assert table, result.stdout  # the workers' table is there, its sleeps column all '-'
    assert "voluntary context switches" not in result.stdout
