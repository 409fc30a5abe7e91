"""render/simple_table.py: a SimpleTable prints exactly what rich's Table of the same columns and rows prints (text
and styles, at every width, as the report's console prints it and as a plain console does, stacked by fit.py where
it is too wide), and writes its lines itself, without rich's Table, where it fits."""

from __future__ import annotations

import io
import random

import pytest
from conftest import printed_like_the_report
from rich.console import Group
from rich.text import Text

from accept_order.cli.consoles import ReportConsole
from accept_order.core.measures import WorkerCounters
from accept_order.render.evidence import listener_table
from accept_order.render.fit import fitted
from accept_order.render.simple_table import SimpleTable
from accept_order.render.workers import worker_table

# digits and figures as the reports' cells hold them, and what rich measures or lays out otherwise: wide
# characters, a space inside, a space at an end, a tab, a control character, a line break (zero-width characters
# have a test of their own: among these, most cells would hold one, and few tables would take the direct path)
CHARS = ["0", "1", "9", "a", "Z", "-", "%", ".", ",", ":", "[", "µ", "日", " "]
ODD = ["lead", " lead", "trail ", "a\tb", "bell\x07", "two\nlines", "x" * 30]
WIDTHS = (6, 40, 79, 120)


def _word(rng: random.Random, low: int, high: int) -> str:
    return "".join(rng.choice(CHARS) for _ in range(rng.randint(low, high))).strip(" ") or "w"


def _random_table(rng: random.Random) -> SimpleTable:
    count = rng.randint(1, 5)
    columns = [(_word(rng, 1, 8), rng.choice(["left", "right"])) for _ in range(count)]
    title = rng.choice([None, _word(rng, 1, 10), _word(rng, 20, 60), rng.choice(ODD)])
    table = SimpleTable(columns, title=title)  # type: ignore[arg-type]
    for _ in range(rng.choice([0, 1, 3, 6])):
        table.add_row(*(_word(rng, 0, 9) if rng.random() < 0.95 else rng.choice(ODD) for _ in range(count)))
    return table


class _AsciiStdout(io.StringIO):
    """A stdout that cannot encode the table's rule (PYTHONIOENCODING=ascii): rich draws its box in ASCII there."""

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "ascii"


def _report_console(table: object, width: int, color: bool, piped: bool, ascii_only: bool = False) -> str:
    """As print_report prints it (fitted, the report's console: trimmed lines; piped: prose not wrapped)."""
    out = _AsciiStdout() if ascii_only else io.StringIO()
    terminal = {"force_terminal": True, "color_system": "truecolor"} if color else {"force_terminal": False}
    console = ReportConsole(piped, file=out, width=width, **terminal)  # type: ignore[arg-type]
    console.print(fitted(Group(Text("before"), table, Text("after"))), crop=False)  # type: ignore[arg-type]
    return out.getvalue()


def _same(table: SimpleTable) -> None:
    rich_table = table.table()
    for width in WIDTHS:
        for color in (False, True):
            for piped in (False, True):
                ours, theirs = (
                    _report_console(table, width, color, piped),
                    _report_console(rich_table, width, color, piped),
                )
                assert ours == theirs, (width, color, piped)
            plain = printed_like_the_report(fitted(table), width, color)
            assert plain == printed_like_the_report(fitted(rich_table), width, color), (width, color)


@pytest.mark.parametrize("seed", range(8))
def test_prints_what_rich_prints(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(5):
        _same(_random_table(rng))


def _counters(index: int, pid: int) -> WorkerCounters:
    return WorkerCounters(
        index=index, pid=pid, wakeups=6, accepts=6, empty=0, max_batch=1, voluntary_switches=7,
        involuntary_switches=1, cpu_s=0.0009, affinity=(0, 1, 3),
    )  # fmt: skip


def test_the_reports_tables_print_what_rich_printed() -> None:
    """The per-worker table (run's, herd's with its two more columns and a title) and ss's listeners."""
    counters = [_counters(0, 1234567), _counters(1, 89), _counters(2, 90)]
    _same(worker_table(counters, [6, 0, 0]))
    _same(worker_table(counters, None, title="epoll", detail=True))
    _same(worker_table(counters, [1, 2], title="served per worker", ids="tid"))
    rows = [{"queue": 0, "backlog": 511, "address": "::1", "port": 8080, "inode": 4242}, {"address": "127.0.0.1"}]
    _same(listener_table(rows, title="listeners (start)"))


def test_a_table_that_fits_is_written_without_richs_table() -> None:
    """Where it fits, the lines are the SimpleTable's own (no Table made: the cost this module saves); where it
    does not, rich's Table prints it, stacked."""
    counters = [_counters(0, 1234567), _counters(1, 89)]
    table = worker_table(counters, [6, 0])
    _report_console(table, 120, color=False, piped=True)
    assert table._table is None
    narrow = _report_console(table, 40, color=False, piped=True)
    assert table._table is not None
    assert narrow.count(" worker ") >= 2  # stacked in parts, each repeating the key column


def test_an_ascii_stdout_gets_the_table_rich_draws_in_ascii() -> None:
    """PYTHONIOENCODING=ascii (or a Latin-1 terminal): rich substitutes an ASCII box for SIMPLE_HEAD ('|', '+',
    '-' rules), which the direct path does not draw: there it is rich's Table, byte for byte."""
    counters = [_counters(0, 1234567), _counters(1, 89)]
    rows = [{"queue": 0, "backlog": 511, "address": "::1", "port": 8080, "inode": 4242}]
    for table in (worker_table(counters, [6, 0]), worker_table(counters, None, title="epoll", detail=True)):
        for width in WIDTHS:
            for color in (False, True):
                ours = _report_console(table, width, color, piped=False, ascii_only=True)
                assert ours == _report_console(table.table(), width, color, piped=False, ascii_only=True)
                assert "\u2500" not in ours  # SIMPLE_HEAD's rule, which an ASCII stdout cannot print
    listeners = listener_table(rows, title="listeners (start)")
    assert _report_console(listeners, 120, False, piped=True, ascii_only=True) == _report_console(
        listeners.table(), 120, False, piped=True, ascii_only=True
    )


def test_zero_width_characters_are_laid_out_by_rich() -> None:
    """A character of no width (a combining accent at a cell's start, U+1160's Hangul filler alone) is measured
    by cell_len as nothing, where rich's Table lays it out otherwise (a column of no width, an accent moved):
    there it is rich's Table. Both cases printed otherwise than rich's Table before _plain's width check."""
    _same(SimpleTable([("µ9", "left"), ("\u1160", "left"), ("本", "left")]))
    _same(SimpleTable([("\u0301e\u0301", "right"), ("\u1160", "right")], title="t\u0301"))
