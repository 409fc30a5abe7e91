"""show --format hdr of a result that keeps no latency histogram says so in one line, in English:
'a observe result has no latency histogram' was what an observation of nginx got (the csv refusals were
fixed for 'a inspect' before; hdr's kept its own article)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import assert_one_error_line, run_cli

GOLDEN = Path(__file__).parent / "data" / "golden"


@pytest.mark.parametrize(("kind", "article"), [("observe", "an"), ("inspect", "an"), ("run", "a"), ("herd", "a")])
def test_hdr_of_a_kind_without_histogram_names_it_with_its_article(kind: str, article: str) -> None:
    result = run_cli(["show", str(GOLDEN / f"{kind}.json"), "--format", "hdr"])
    assert_one_error_line(result, 2, f"{article} {kind} result has no latency histogram for --format hdr")
