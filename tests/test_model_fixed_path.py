"""Review RF2 of 6de3a3e. The Model table now adds the 'fixed path' (the fastest measured over the model's fastest)
to its predictions, as the sentence did. Two things were left: (1) `show --format csv --table model` kept the model
alone under predicted_*, so the CSV and the table gave two meanings to one name; (2) where that path is most of the
latency (87.8 ms in the tester's HAProxy run, 89% of the CPUs used by other processes), the sentence called it
'set-up, the kernel, the client ... not the workers' queues' and the run 'within a factor of 1.25 of what queueing
alone predicts': a minimum that large is waiting the model leaves out (a CPU others held, workers slower than their
CPU time, their queue too), so queueing alone does not explain that run."""

from __future__ import annotations

import csv
import dataclasses
import io

from test_small_sentences_model import run_of

from accept_order.experiments.latency.model_report import model_csv, model_table_lines
from accept_order.experiments.latency.model_verdict import judged, model_line

# 2 workers, 4 clients, 1 ms of service (the model: about 2 ms), yet every connection took 38 to 44 ms
SLOW = [38_000 + (6_000 * i) // 599 for i in range(600)]


def test_a_path_that_is_most_of_the_latency_is_not_said_to_be_a_path_queueing_leaves_alone() -> None:
    line = model_line([run_of("blocking", SLOW)]) or ""
    assert "not the workers' queues" not in line, line
    assert "more than a path takes: whatever every connection waited for that the model leaves out" in line, line
    assert line.endswith("within a factor of 1.25 of what queueing predicts with that time added"), line
    # a short path, as on an idle loopback: said as before
    quick = model_line([run_of("blocking", [2_000 + i for i in range(600)])]) or ""
    assert "more than a path takes" not in quick and "with that time added" not in quick, quick


def test_in_a_throttled_cgroup_the_path_s_wait_is_put_on_its_cpu_limit_not_other_processes() -> None:
    # the same run in a container whose CPU limit throttled the tool's cgroup (core/cgroup_cpu.py): every connection
    # waited for the CPU its limit held back, which no other process held
    state = {"throttled_us": [0], "limit": "cpu.max 20000/100000", "at_s": 1.0}
    machine = {"before": {"cgroup_cpu": state}, "after": {"cgroup_cpu": {**state, "throttled_us": [700_000]}}}
    run = dataclasses.replace(run_of("blocking", SLOW), evidence={"machine": machine})
    line = model_line([run]) or ""
    assert "(a CPU the run's cgroup's CPU limit held back, workers slower than their CPU time" in line, line
    assert "other processes held" not in line, line


def test_the_csv_s_predictions_are_the_table_s() -> None:
    run = run_of("blocking", SLOW)
    _, fixed = judged([run])
    assert fixed > 30  # the case: a path far above the model's fastest
    (row,) = csv.DictReader(io.StringIO(model_csv([run.to_dict()])))
    assert float(row["fixed_path_ms"]) == fixed
    cells = model_table_lines([run], lambda r: r.server.label)[2].split()[-4:]  # p50, p99, p99.9, dev
    for name, cell in zip(("p50", "p99", "p99.9", "dev"), cells, strict=True):
        shown = float(cell.split("/")[0])
        assert abs(float(row[f"predicted_{name}_ms"]) - shown) <= 0.05 * shown + 0.001, (name, row, cells)
    assert float(row["predicted_p99_ms"]) > fixed  # the path is in it, not the model's 2 ms alone
