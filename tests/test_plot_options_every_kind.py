"""`plot --cdf` of a result that is not a latency one drew the file's usual picture and said nothing of the --cdf
it had ignored. Each plot option is checked against every kind of result file the same way: --cdf is honoured
(the histograms drawn as CDFs on a log axis) by the kinds that declare it and refused, exit 2 and one line, by every
other kind, before anything is drawn; --title every kind's picture honours."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import assert_one_error_line, run_cli

from accept_order.experiments import find
from accept_order.experiments.documents import load, plot_document
from accept_order.render.plots import PlotOptions

GOLDEN = Path(__file__).parent / "data" / "golden"
FILES = sorted(p.name for p in GOLDEN.glob("*.json"))  # one saved file of every kind (and each repeat's)
CDF_KINDS = ("latency", "latency-compare")


@pytest.fixture(scope="module")
def matplotlib() -> Any:
    return pytest.importorskip("matplotlib")


def test_every_kind_is_among_the_files() -> None:
    kinds = {load(GOLDEN / name)[0] for name in FILES}
    assert set(CDF_KINDS) <= kinds and len(kinds) >= 10, kinds


@pytest.mark.parametrize("name", FILES)
def test_cdf_is_drawn_or_refused(name: str, tmp_path: Path, matplotlib: Any) -> None:
    kind, document = load(GOLDEN / name)
    experiment = find(kind)
    assert experiment is not None and experiment.draws_cdf == (kind in CDF_KINDS), kind
    out = tmp_path / "cdf.png"
    done = run_cli(["plot", str(GOLDEN / name), "--cdf", "-o", str(out)])
    if kind in CDF_KINDS:
        assert done.exit_code == 0, done.output
        assert plot_document(kind, document, PlotOptions(cdf=True)).axes[0].get_xscale() == "log"
        assert plot_document(kind, document).axes[0].get_xscale() != "log"
        return
    assert_one_error_line(
        done, 2, "--cdf draws the histograms of latency and latency-compare results", f"{kind} result's picture"
    )
    assert not out.exists()


@pytest.mark.parametrize("name", FILES)
def test_every_picture_takes_its_title(name: str, matplotlib: Any) -> None:
    kind, document = load(GOLDEN / name)
    assert plot_document(kind, document, PlotOptions(title="mine")).get_suptitle() == "mine"
