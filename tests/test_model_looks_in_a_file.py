"""A latency file's model keeps the busy looks behind its service source (faef558: busy_looks, slept_looks,
slept_share) and the share asleep (busy_waited), which 'show' reads back into the service line's 'N of the M busy
looks found them asleep (X% of the busy time, L%-H% at 95% confidence)'. Unchecked, a share of 7.5 read '750% of
the busy time', and more asleep looks than busy ones stopped show with 'malformed ... (math domain error)': now one
line naming the field, exit 1; those that fit read as before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_runs import run_cli

FILE = Path(__file__).parent / "data" / "review_rd_uwsgi_masterless_attach.json"
LOOKED = {"service_source": "busy", "busy_looks": 352, "slept_looks": 142, "slept_share": 0.4, "busy_waited": 0.4}


def _shown(folder: Path, **model: Any) -> Any:
    document = json.loads(FILE.read_text())
    document["model"] |= {**LOOKED, "waited_in": "clock_nanosleep", "cpu_mean_ms": 0.05, **model}
    path = folder / "latency.json"
    path.write_text(json.dumps(document))
    return run_cli(["show", str(path)], columns=400)


def test_the_looks_read_back(tmp_path: Path) -> None:
    result = _shown(tmp_path)
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())  # as one line, wherever the terminal's width broke it
    assert "142 of the 352 busy looks found them asleep (40% of the busy time, 35%-46% at 95% confidence)" in said


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("slept_share", 7.5, "model.slept_share: expected a number from 0 to 1 or null, got 7.5"),
        ("busy_waited", 1.5, "model.busy_waited: expected a number from 0 to 1 or null, got 1.5"),
        ("slept_looks", 353, "model.slept_looks: is 353, more than its 352 busy looks"),
    ],
)
def test_looks_that_do_not_add_up_are_one_line(tmp_path: Path, field: str, value: Any, said: str) -> None:
    result = _shown(tmp_path, **{field: value})
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith(said), result.stderr
