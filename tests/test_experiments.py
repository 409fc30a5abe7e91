"""The registry of experiments (experiments.EXPERIMENTS): every result kind a command saves is registered
once, and from a saved file of that kind (tests/data/v2, written by the tool) it loads, reports, draws
and exports; `show` imports only the experiment it shows, and never matplotlib."""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from accept_order.experiments import EXPERIMENTS, documents, find
from accept_order.experiments.documents import load, render_document
from accept_order.results import export

V2 = Path(__file__).parent / "data" / "v2"
# one per kind, named by it; more of a kind are named KIND-WHAT (repeat-burst: a repeated burst)
FIXTURES = sorted(p.stem for p in V2.glob("*.json"))


def test_every_kind_has_a_saved_fixture() -> None:
    assert set(EXPERIMENTS) <= set(FIXTURES)
    assert all(name in EXPERIMENTS or name.split("-")[0] in EXPERIMENTS for name in FIXTURES), FIXTURES


# the CSV tables of kept connections (--requests-per-connection other than 1, --pool): the connections, and their
# first requests apart from the later ones (c3d58d9)
KEPT_ONLY = ("connections", "first_requests")
HOSTS_ONLY = ("hosts",)  # the CSV tables of client hosts (--clients): rows only where a load ran on them


def _kept(document: dict) -> bool:
    runs = document.get("runs", [document])
    return any((run.get("load") or {}).get("requests_per_connection", 1) != 1 for run in runs if isinstance(run, dict))


def _hosted(document: dict) -> bool:
    runs = document.get("runs", [document])
    parts = [p for run in runs for key in ("cells", "steps") for p in run.get(key, [])] + runs
    return any(p.get("hosts") for p in parts if isinstance(p, dict))


@pytest.mark.parametrize("name", FIXTURES)
def test_kind_loads_reports_and_exports(name: str) -> None:
    kind = name if name in EXPERIMENTS else name.split("-")[0]
    file_kind, document = load(V2 / f"{name}.json")
    experiment = find(kind)
    assert file_kind == kind and experiment is not None and experiment.kind == kind
    result = experiment.load(document)
    assert result.to_dict()  # the typed result is what the command saves
    console = Console(width=120, record=True, file=io.StringIO())
    console.print(render_document(kind, document))
    assert console.export_text().strip()
    for name in experiment.tables:
        table = list(csv.reader(io.StringIO(documents.table(kind, document, name))))
        # each row names its run (a repeated result: its round, then its run; the atlas: server and mode)
        assert table[0][:2] in (["run"] + table[0][1:2], ["round", "run"], ["round", "server"]), (kind, name)
        if name in KEPT_ONLY:  # a table of kept connections: rows only where a run kept them (latency-kept)
            assert (len(table) > 1) == _kept(document), (kind, name)
        elif name in HOSTS_ONLY:  # a table of client hosts: rows only where a load ran on them (latency-hosts)
            assert (len(table) > 1) == _hosted(document), (kind, name)
        else:
            assert len(table) > 1, (kind, name)
    if experiment.tables:
        assert documents.table(kind, document) == documents.table(kind, document, experiment.default_table)
    else:
        with pytest.raises(export.ExportError):
            documents.table(kind, document)
    if experiment.latency_runs is not None:
        assert all(hist.count for _, hist in documents.latency_runs(kind, document))
    else:
        with pytest.raises(export.ExportError, match="no latency histogram"):
            documents.latency_runs(kind, document)


@pytest.mark.parametrize("name", FIXTURES)
def test_kind_draws(name: str) -> None:
    pytest.importorskip("matplotlib")
    from accept_order.experiments.documents import plot_document
    from accept_order.render.plots import figure_bytes

    kind, document = load(V2 / f"{name}.json")
    assert figure_bytes(plot_document(kind, document), "png")[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_unregistered_kind_is_none() -> None:
    assert find("other") is None


def test_show_imports_only_its_own_experiment() -> None:
    code = (
        "import sys\n"
        "from accept_order.cli import main\n"
        f"sys.argv = ['accept-order', 'show', {str(V2 / 'burst.json')!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "from accept_order.experiments import EXPERIMENTS\n"
        "folders = {entry.folder for entry in EXPERIMENTS.values()}\n"
        "names = {m.split('.')[2] for m in sys.modules if m.startswith('accept_order.experiments.')}\n"
        "loaded = sorted(names & folders)\n"
        "print('MODULES', loaded, 'matplotlib' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    line = done.stdout.splitlines()[-1]
    assert line == "MODULES ['burst'] False", done.stdout[-500:] + done.stderr
