"""`show --format json` of a latency result kept each run's saved model alone, while the Model table and
`show --format csv --table model` add the 'fixed path' (the fastest measured connection over the model's fastest)
to every predicted percentile: the JSON now carries that figure (fixed_path_ms) and the model's sentence, as saved
and, for a file saved without them, derived again when shown."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from pathlib import Path

from conftest import run_cli
from test_model_fixed_path import SLOW
from test_small_sentences_model import run_of

from accept_order.experiments.documents import save
from accept_order.experiments.latency.model_verdict import judged, model_line
from accept_order.experiments.latency.result import LatencyCompareResult, SweepResult


def _shown(path: Path, *extra: str) -> str:
    result = run_cli(["show", str(path), *extra])
    assert result.exit_code == 0, result.output
    return result.stdout


def _csv_row(path: Path) -> dict[str, str]:
    (row,) = csv.DictReader(io.StringIO(_shown(path, "--format", "csv", "--table", "model")))
    return row


def test_a_latency_file_s_json_carries_the_fixed_path_its_table_and_csv_add(tmp_path: Path) -> None:
    run = run_of("blocking", SLOW)
    _, fixed = judged([run])
    assert fixed > 30  # the case: a path far above the model's fastest (about 2 ms)
    path = tmp_path / "latency.json"
    save(path, "latency", run)
    assert json.loads(path.read_text())["fixed_path_ms"] == fixed  # saved with the run
    doc = json.loads(_shown(path, "--format", "json"))
    assert doc["fixed_path_ms"] == fixed
    assert doc["model_verdict"] == model_line([run])
    # the CSV's predicted p99 is the JSON's model plus its fixed path: one meaning for 'predicted'
    assert float(_csv_row(path)["predicted_p99_ms"]) == doc["model"]["p99_ms"] + doc["fixed_path_ms"]
    assert f"each prediction with the {fixed:.2f} ms fixed path" in _shown(path)


def test_a_file_saved_without_the_figure_has_it_when_shown(tmp_path: Path) -> None:
    run = run_of("blocking", SLOW)
    path = tmp_path / "old.json"
    save(path, "latency", run)
    saved = json.loads(path.read_text())
    del saved["fixed_path_ms"], saved["model_verdict"]  # as a file from before them has it
    path.write_text(json.dumps(saved))
    doc = json.loads(_shown(path, "--format", "json"))
    assert doc["fixed_path_ms"] == judged([run])[1]


def test_comparisons_and_sweeps_carry_the_one_fixed_path_of_their_runs(tmp_path: Path) -> None:
    runs = (run_of("blocking", SLOW), run_of("reuseport", [s + 3_000 for s in SLOW]))
    _, fixed = judged(runs)
    for kind, result in (("latency-compare", LatencyCompareResult(runs)), ("sweep", SweepResult(runs))):
        path = tmp_path / f"{kind}.json"
        save(path, kind, result)
        doc = json.loads(_shown(path, "--format", "json"))
        assert doc["fixed_path_ms"] == fixed, kind
        rows = list(csv.DictReader(io.StringIO(_shown(path, "--format", "csv", "--table", "model"))))
        assert [float(r["fixed_path_ms"]) for r in rows] == [fixed, fixed], kind


def test_a_run_without_a_model_carries_no_fixed_path(tmp_path: Path) -> None:
    path = tmp_path / "none.json"
    save(path, "latency", dataclasses.replace(run_of("blocking", SLOW), model=None))
    doc = json.loads(_shown(path, "--format", "json"))
    assert "fixed_path_ms" not in doc and "model_verdict" not in doc
