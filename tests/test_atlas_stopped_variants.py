"""Review RT of 2059c56: a stopped atlas file's `variants` (rows per round) is what its report divides the rows by
into rounds; the shape took any non-negative integer, so 0 fell back to the old 'Interrupted: the rows are those
that finished.' and 1 (four rows and one cut short, two rounds asked) read 'Interrupted in round 5 of 2'. Now such
a file is one line, exit 1, as any other file that does not fit."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.experiments.atlas.result import AtlasResult, AtlasRow
from accept_order.results.envelope import save


def _stopped_file(tmp_path: Path, variants: int) -> str:
    modes = [("blocking", 1), ("epoll", 1), ("poll", 1), ("blocking", 2)]
    rows = tuple(AtlasRow("builtin", mode, f"--mode {mode}", round_, served=(5, 5)) for mode, round_ in modes)
    result = AtlasResult(rows, {"workers": 2, "repeat": 2}, None, {}, True, "builtin epoll", variants)
    path = str(tmp_path / f"atlas-{variants}.json")
    save(path, "atlas", result.to_dict())
    return path


def test_variants_that_hold_the_rows_are_read(tmp_path: Path) -> None:
    result = run_cli(["show", _stopped_file(tmp_path, 3)])  # 4 rows and the one cut short: 2 rounds of 3 hold them
    assert result.exit_code == 0, result.output
    assert "Interrupted in round 2 of 2; builtin epoll was cut short" in result.stdout


@pytest.mark.parametrize("variants", [0, 1, 2])  # 2: 2 rounds of 2 leave no room for the row cut short
def test_variants_too_few_for_the_rows_are_one_line(tmp_path: Path, variants: int) -> None:
    result = run_cli(["show", _stopped_file(tmp_path, variants)])
    assert_one_error_line(result, 1, "variants: is", "4 rows and one cut short in 2 rounds")
