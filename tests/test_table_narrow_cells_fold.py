"""A stacked table part whose one column does not fit beside the key columns cut its cells with '…': reload at
COLUMNS=40 showed reuseport's failures as 'ECONNRE…' (the errno is the point of the column). Such a part folds
its cells instead: every character is shown."""

from __future__ import annotations

from pathlib import Path

from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden" / "reload.json"


def test_no_cell_is_cut_at_40_columns() -> None:
    out = run_cli(["show", str(GOLDEN)], columns=40).stdout
    assert "…" not in out, out
    assert "ECONNRES" in out  # folded across two lines, not cut


def test_a_part_that_fits_is_as_it_was() -> None:
    wide = run_cli(["show", str(GOLDEN)], columns=200).stdout
    assert "ECONNRESET 5" in wide
