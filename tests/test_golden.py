"""Golden output: every kind of saved result, printed by `accept-order show` (as text, and as CSV with the
kind's default table), must be exactly the text kept next to it in tests/data/golden/.

Regenerate every golden file after a deliberate change to a renderer (then read the diff before committing):

    .venv/bin/pytest tests/test_golden.py --regen-golden

The results (tests/data/golden/NAME.json) were saved once by the tool itself, with the commands in FIXTURES;
they hold one machine's measurements, and rendering them must not depend on the machine that renders.
What the rendering does depend on, and the tests fix (GOLDEN_ENV):
- the width: COLUMNS (without it, 120 columns off a terminal and the terminal's width on one);
- whether rich thinks it writes to a terminal: FORCE_COLOR or TTY_COMPATIBLE=1 add ANSI styles;
- the output's encoding: rich draws tables with ASCII characters when stdout is not UTF-8 (click's CliRunner
  writes UTF-8; a real stdout is UTF-8 in any locale on Python 3.7+, unless PYTHONIOENCODING says otherwise).
The time zone, the locale and the directory it runs in do not matter (nothing renders the clock or a path).
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from accept_order.cli.app import main
from accept_order.core.histogram import LatencyHistogram
from accept_order.core.spec import ServerSpec
from accept_order.experiments import EXPERIMENTS as KINDS
from accept_order.experiments import every

GOLDEN = Path(__file__).parent / "data" / "golden"
WIDTH = 120
GOLDEN_ENV: dict[str, str | None] = {
    "COLUMNS": str(WIDTH),
    "LINES": None,
    "FORCE_COLOR": None,
    "TTY_COMPATIBLE": None,
    "TTY_INTERACTIVE": None,
    "NO_COLOR": None,
    "JUPYTER_COLUMNS": None,
    "JUPYTER_LINES": None,
}

# name -> how the result was saved (`accept-order ARGS --json tests/data/golden/NAME.json`, on a 2-CPU VM).
# serve: started with the command, four `nc -d 127.0.0.1 PORT` clients, then SIGTERM.
FIXTURES: dict[str, str] = {
    "run": "run -m blocking -n 6",
    "compare": "compare --modes blocking,epoll,reuseport -n 6",
    "herd": "herd --modes blocking,epoll,epoll-herd -w 2 -n 6",
    "latency": "latency -m blocking -w 2 -n 200 -c 4",
    "latency-compare": "latency --modes blocking,reuseport -w 2 -n 200 -c 4",
    "sweep": "sweep --accept-batch 1,0 -w 2 -n 200 -c 4",
    "serve": "serve -m blocking -w 2",
    "reload": "reload --modes epoll,reuseport --how leave --migrate 0,1 -w 3 -c 16 --work-ms 1 --duration 1s",
    "burst": "burst --modes epoll,reuseport -w 2 --clients 20,50",
    "ramp": "ramp -w 2 --rates 50,100 --step 300ms --keep-going",
    "repeat": "compare --modes blocking,epoll -n 6 --repeat 2",
    "repeat-latency": "latency --modes blocking,reuseport -w 2 -n 200 -c 4 --repeat 2",
    "repeat-burst": "burst --modes epoll,reuseport -w 2 --clients 20,50 --repeat 2",
    "repeat-ramp": "ramp --modes epoll,reuseport -w 2 --work-us 2000 --rates 200,2000 --step 300ms --repeat 2",
    "repeat-reload": "reload --modes epoll,reuseport --how leave --migrate 0,1 -w 3 -c 16 --work-ms 1 --duration 500ms "
    "--repeat 2",
    # nginx 1.22 from a hand-written config (3 workers, listen 127.0.0.1:8089), started by hand
    "inspect": "inspect --port 8089",
    "atlas": "atlas --servers nginx,haproxy --load-connections 1000",
    # an nginx with 3 workers and multi_accept on (--accept-batch 0), serving `wrk -t1 -c4 -H 'Connection: close'`
    "observe": "observe NGINX_MASTER_PID --duration 5s",
}
CSV_FIXTURES = list(FIXTURES)


def read_exactly(path: Path) -> str:
    with open(path, encoding="utf-8", newline="") as f:  # no newline translation: the bytes as rendered
        return f.read()


def kind_of(name: str) -> str:
    return str(json.loads((GOLDEN / f"{name}.json").read_text())["kind"])


def show(*args: str, charset: str = "utf-8") -> Result:
    return CliRunner(charset=charset).invoke(main, ["show", *args], env=GOLDEN_ENV, prog_name="accept-order")


def compare_with_golden(rendered: str, golden: Path, regen: bool) -> None:
    if regen:
        golden.write_text(rendered, encoding="utf-8", newline="")
        return
    assert golden.exists(), f"no golden file {golden.name}: run pytest tests/test_golden.py --regen-golden"
    expected = read_exactly(golden)
    diff = "".join(
        difflib.unified_diff(
            expected.splitlines(keepends=True), rendered.splitlines(keepends=True), golden.name, "rendered"
        )
    )
    assert rendered == expected, f"the output differs from {golden.name}:\n{diff}"


def test_every_kind_has_a_golden_result() -> None:
    """A new kind of result must come with a saved file here (and its golden text)."""
    assert sorted({kind_of(name) for name in FIXTURES}) == sorted(KINDS)
    assert {kind_of(name) for name in CSV_FIXTURES} == {e.kind for e in every() if e.tables}
    for name in FIXTURES:  # a kind's name, then what sets this one apart (repeat-burst: a repeated burst)
        assert name == kind_of(name) or name.startswith(f"{kind_of(name)}-"), name
    saved = sorted(p.stem for p in GOLDEN.glob("*.json"))
    assert saved == sorted(FIXTURES)


@pytest.mark.parametrize("name", list(FIXTURES))
def test_show_prints_the_golden_text(name: str, regen_golden: bool) -> None:
    result = show(str(GOLDEN / f"{name}.json"))
    assert result.exit_code == 0 and result.stderr == "", result.output
    compare_with_golden(result.stdout, GOLDEN / f"{name}.txt", regen_golden)


@pytest.mark.parametrize("name", CSV_FIXTURES)
def test_show_csv_prints_the_golden_table(name: str, regen_golden: bool) -> None:
    result = show(str(GOLDEN / f"{name}.json"), "--format", "csv")
    assert result.exit_code == 0 and result.stderr == "", result.output
    compare_with_golden(result.stdout, GOLDEN / f"{name}.csv", regen_golden)


def test_a_separate_process_prints_the_same_text(tmp_path: Path) -> None:
    """What a user's pipe gets (no COLUMNS) is the in-process golden text, from any directory, but for its prose:
    a paragraph is one line, never broken mid-sentence at 120 columns; tables are as wide as at 120 columns, and
    no line ends in spaces."""
    env = {k: v for k, v in os.environ.items() if k not in GOLDEN_ENV}
    proc = subprocess.run(
        [sys.executable, "-m", "accept_order", "show", str(GOLDEN / "latency-compare.json")],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        cwd=tmp_path,
        env={**env, "TZ": "Pacific/Chatham", "LC_ALL": "C"},
    )
    assert proc.returncode == 0, proc.stderr
    golden = read_exactly(GOLDEN / "latency-compare.txt")
    assert proc.stdout.split() == golden.split()  # the same words in the same order: only line breaks differ
    piped = proc.stdout.splitlines()
    assert not [line for line in piped if line.endswith(" ")]
    table = [line for line in golden.splitlines() if line.startswith(("mode ", "---", "blocking ", "reuseport "))]
    assert len(table) == 4 and all(line in piped for line in table)  # the table as at 120 columns
    verdict = next(line for line in piped if line.startswith("Verdict: "))  # 4 lines at 120 columns
    assert len(verdict) > 400 and verdict.endswith("says whether they differ"), verdict


@pytest.mark.parametrize("name", ["repeat", "repeat-latency"])
def test_a_repeated_result_exports_one_row_per_run_of_each_round(name: str) -> None:
    doc = json.loads((GOLDEN / f"{name}.json").read_text())
    result = show(str(GOLDEN / f"{name}.json"), "--format", "csv")
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [(int(r["round"]), r["run"]) for r in rows] == [
        (n, ServerSpec.from_dict(run["server"]).label) for n, row in enumerate(doc["rounds"], 1) for run in row
    ]
    runs = [run for row in doc["rounds"] for run in row]
    if doc["of"] in ("latency", "latency-compare", "sweep"):
        assert [int(r["count"]) for r in rows] == [LatencyHistogram.from_dict(run["histogram"]).count for run in runs]
    else:
        assert [int(r["served"]) for r in rows] == [
            sum(1 for rec in run["records"] if rec["error"] is None) for run in runs
        ]
        assert [r["pattern"] for r in rows] == [run["verdict"]["pattern"] for run in runs]
    workers = show(str(GOLDEN / f"{name}.json"), "--format", "csv", "--table", "workers")
    assert workers.exit_code == 0, workers.output
    assert len(list(csv.DictReader(io.StringIO(workers.stdout)))) == sum(len(run["counters"]) for run in runs)


def test_a_stdout_that_cannot_encode_the_report_spells_it_in_ascii() -> None:
    """herd's 'cpu µs/conn' on an ASCII stdout (PYTHONIOENCODING=ascii): 'cpu us/conn', not a traceback."""
    result = show(str(GOLDEN / "herd.json"), charset="ascii")
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 0, result.stderr
    assert "cpu µs/conn" in read_exactly(GOLDEN / "herd.txt")
    assert "cpu us/conn" in result.stdout


@pytest.mark.parametrize("name", ["run", "serve"])
def test_the_workers_table_says_what_each_worker_served(name: str) -> None:
    doc = json.loads((GOLDEN / f"{name}.json").read_text())
    served_by = [r["worker"] for r in doc["records"] if r["error"] is None] if name == "run" else doc["sequence"]
    result = show(str(GOLDEN / f"{name}.json"), "--format", "csv", "--table", "workers")
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [row["served"] for row in rows] == [str(served_by.count(int(row["index"]))) for row in rows]
