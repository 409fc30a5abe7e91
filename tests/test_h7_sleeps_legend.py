"""'sleeps' meant two things and no legend said which: in `latency --server puma` a launched Puma worker's sleeps
are its server thread's (the one that waits in select: its wakeups, servers/watched.ThreadedUsage), under
`--attach` every thread's (servers/thread_switches.EveryThreadUsage), and latency's worker table had no legend.
Whose switches they are is each kind's to say (ServerKind.sleeps), and the reports' legend says it: latency's
where a worker is not one thread, run's always. The built-in workers, one thread each, keep the legend's words."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

GOLDEN = Path(__file__).parent / "data" / "golden"


def _shown(tmp_path: Path, name: str, server: str, mode: str, **spec: object) -> list[str]:
    doc = json.loads((GOLDEN / f"{name}.json").read_text())
    doc["server"].update(server=server, mode=mode, **spec)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    result = run_cli(["show", str(path)])
    assert result.exit_code == 0, result.output
    return [line for line in result.stdout.splitlines() if "sleeps: " in line]


@pytest.mark.parametrize(
    ("server", "mode", "spec", "said"),
    [
        (
            "puma",
            "cluster",
            {},
            "voluntary context switches of each worker's server thread alone, the one in select",
        ),
        ("attached", "attached", {"attach": [1]}, "voluntary context switches of every thread of each worker"),
    ],
    ids=["puma", "attached"],
)
def test_latency_says_whose_sleeps_they_are(tmp_path: Path, server: str, mode: str, spec: dict, said: str) -> None:
    legend = _shown(tmp_path, "latency", server, mode, **spec)
    assert len(legend) == 1 and said in legend[0], legend


def test_the_built_in_workers_keep_the_legends_words(tmp_path: Path) -> None:
    assert _shown(tmp_path, "latency", "builtin", "epoll") == []  # one thread each: nothing to tell apart
    (legend,) = _shown(tmp_path, "run", "builtin", "blocking")
    assert "sleeps: voluntary context switches (times the worker blocked)" in legend, legend
