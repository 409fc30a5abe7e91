"""Every report fits an 80-column terminal without losing anything: no line is longer than 80, nothing is
cut with "…", and every word the report prints at 120 columns (the golden text: its verdict, its key
column, every figure) is still printed at 80, where tables are stacked and long lines folded instead."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from test_golden import FIXTURES, GOLDEN, GOLDEN_ENV, read_exactly

from accept_order.cli.app import main

NARROW = 80
RULE = re.compile(r"^[─━\-+|]+$")  # table rules: their length follows the table's width


def words(text: str) -> set[str]:
    return {w for w in text.split() if not RULE.match(w)}


def at(width: int, *args: str) -> Result:
    env = {**GOLDEN_ENV, "COLUMNS": str(width)}
    return CliRunner().invoke(main, list(args), env=env, prog_name="accept-order")


def assert_fits(text: str, width: int = NARROW) -> None:
    long = [line for line in text.splitlines() if len(line) > width]
    assert not long, f"{len(long)} lines longer than {width}:\n" + "\n".join(long)
    assert "…" not in text, text
    padded = [line for line in text.splitlines() if line.endswith(" ")]
    assert not padded, f"{len(padded)} lines end in spaces:\n" + "\n".join(repr(line) for line in padded)


@pytest.mark.parametrize("name", list(FIXTURES))
def test_every_report_fits_80_columns_and_keeps_every_word(name: str) -> None:
    result = at(NARROW, "show", str(GOLDEN / f"{name}.json"))
    assert result.exit_code == 0 and result.stderr == "", result.output
    assert_fits(result.stdout)
    wide = read_exactly(GOLDEN / f"{name}.txt")
    assert words(wide) <= words(result.stdout), sorted(words(wide) - words(result.stdout))
    # The verdict (a line or a column) is there (stacked parts keep the key columns: the test below).
    for verdict in ("Verdict", "verdict"):
        assert (verdict in wide) <= (verdict in result.stdout)


def test_a_stacked_table_repeats_its_key_columns_in_every_part(tmp_path: Path) -> None:
    """compare with a real server: server and mode name each row, in both parts of the stacked table."""
    doc = json.loads((GOLDEN / "compare.json").read_text())
    doc["runs"][1]["server"]["server"] = "nginx"
    path = tmp_path / "compare.json"
    path.write_text(json.dumps(doc))
    result = at(NARROW, "show", str(path))
    assert result.exit_code == 0, result.output
    assert_fits(result.stdout)
    headers = [line.split() for line in result.stdout.splitlines() if line.split()[:2] == ["server", "mode"]]
    assert len(headers) == 2, result.stdout  # stacked in two parts
    assert "verdict" in headers[0] and "Jain" in [w for h in headers for w in h]
    assert len(re.findall(r"^ ?nginx +epoll ", result.stdout, re.M)) == 2
    wide = at(120, "show", str(path))
    assert words(wide.stdout) <= words(result.stdout)


def test_modes_fits_80_columns() -> None:
    result = at(NARROW, "modes")
    assert result.exit_code == 0, result.output
    assert_fits(result.stdout)


def test_every_stacked_part_repeats_the_key_columns_with_every_rows_key() -> None:
    """render/fit.py on its own: a table far wider than 60 columns, two key columns; each part begins with
    both keys and every row's key values, and every other column is in exactly one part."""
    from rich.console import Console
    from rich.table import Table

    from accept_order.render.fit import key_columns, stack

    table = key_columns(Table("server", "mode", *(f"figure{i}" for i in range(10))), 2)
    rows = [("nginx", "epoll"), ("haproxy", "shards"), ("builtin", "reuseport")]
    for key in rows:
        table.add_row(*key, *(f"{100 + i}.25" for i in range(10)))
    console = Console(width=60, record=True, color_system=None)
    parts = stack(table, console, console.options)
    assert len(parts) >= 2
    seen: list[str] = []
    for part in parts:
        headers = [str(c.header) for c in part.columns]
        assert headers[:2] == ["server", "mode"], headers
        keys = [tuple(str(c) for c in col._cells) for col in part.columns[:2]]
        assert keys == [tuple(r[0] for r in rows), tuple(r[1] for r in rows)]
        seen += headers[2:]
        with console.capture() as capture:
            console.print(part)
        assert all(len(line) <= 60 for line in capture.get().splitlines())
    assert seen == [f"figure{i}" for i in range(10)]


def test_modes_wraps_a_description_in_its_own_column() -> None:
    """At 80 columns a long description continues under itself, not back at column 0."""
    result = at(NARROW, "modes")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    i = next(k for k, line in enumerate(lines) if line.lstrip().startswith("epoll-herd"))
    start = lines[i].index("shared socket")
    assert lines[i + 1][:start].strip() == "" and lines[i + 1][start:].strip(), lines[i : i + 2]


def test_a_wrapped_line_of_an_indented_block_keeps_the_indent() -> None:
    """The kernel evidence is indented two columns: at 80 columns its listeners line wraps, and goes on under
    its own first word ("  511 (from netlink)"), not at column 0."""
    lines = at(NARROW, "show", str(GOLDEN / "latency.json")).stdout.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("  listeners (")]
    assert len(starts) == 2
    for i in starts:
        assert not lines[i].rstrip().endswith("(from netlink)"), lines[i]  # it does wrap at 80
        assert lines[i + 1].startswith("  ") and lines[i + 1].endswith("(from netlink)"), lines[i : i + 2]
