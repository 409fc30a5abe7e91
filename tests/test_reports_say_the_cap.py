"""The load reports say the cap on accepts per wakeup their servers ran with, as latency's one-run headline does:
'burst --accept-batch 4' said '2 workers, work 0 ms, backlog 511', as of a burst without a cap; so did 'ramp' and
'ramp --modes', and 'latency --modes epoll,blocking --accept-batch 4' named no cap at all (its JSON held 4 for epoll,
0 for blocking, whose accept() takes one at a time): two reports, capped and not, read the same."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli

from accept_order.core.spec import ServerSpec
from accept_order.experiments.own_settings import caps_said

GOLDEN = Path(__file__).parent / "data" / "golden"


def test_the_words() -> None:
    epoll, blocking = ServerSpec(mode="epoll", accept_batch=4), ServerSpec(mode="blocking")
    assert caps_said([epoll]) == ", accept-batch 4"
    assert caps_said([ServerSpec(mode="epoll")]) == ""  # 0: until EAGAIN, the default, not said
    assert caps_said([epoll, blocking]) == ", accept-batch 4 (epoll)"
    assert caps_said([epoll, ServerSpec(mode="reuseport", accept_batch=4)]) == ", accept-batch 4"
    assert caps_said([epoll, ServerSpec(mode="reuseport", accept_batch=1)]) == ", accept-batch 4 (epoll), 1 (reuseport)"
    assert caps_said([ServerSpec(mode="io-uring", accept_batch=4)]) == ""  # a mode that reads none (an old file)
    assert caps_said([epoll, epoll, blocking]) == ", accept-batch 4 (epoll)"  # run twice (reload): named once


def _shown(tmp_path: Path, name: str, change: Any) -> str:
    doc = json.loads((GOLDEN / f"{name}.json").read_text())
    for server in change(doc):
        server["accept_batch"] = 4
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(doc))
    result = run_cli(["show", str(path)])
    assert result.exit_code == 0, result.output
    return str(result.stdout)


@pytest.mark.parametrize(
    ("name", "servers", "said"),
    [
        ("burst", lambda d: [r["server"] for r in d["runs"]], "2 workers, work 0 ms, backlog 511, accept-batch 4;"),
        ("ramp", lambda d: [d["server"]], "workers, work 0 ms, backlog 511, accept-batch 4;"),
        ("repeat-ramp", lambda d: [r["server"] for row in d["rounds"] for r in row], ", accept-batch 4;"),
        ("repeat-burst", lambda d: [r["server"] for row in d["rounds"] for r in row], ", accept-batch 4"),
        ("latency-compare", lambda d: [d["runs"][1]["server"]], "work none, accept-batch 4 (reuseport);"),
        # reload: reuseport ran twice (tcp_migrate_req 0 and 1), named once
        ("reload", lambda d: [r["server"] for r in d["runs"][1:]], "work 1 ms, accept-batch 4 (reuseport);"),
        ("repeat-reload", lambda d: [r["server"] for row in d["rounds"] for r in row], ", accept-batch 4"),
    ],
)
def test_each_report_says_it(tmp_path: Path, name: str, servers: Any, said: str) -> None:
    assert said not in run_cli(["show", str(GOLDEN / f"{name}.json")]).stdout
    assert said in _shown(tmp_path, name, servers)


@pytest.mark.parametrize(
    ("name", "servers", "said"),
    [
        ("burst", lambda d: [r["server"] for r in d["runs"]], "backlog 511, accept-batch 4;"),
        ("ramp", lambda d: [d["server"]], "no work, accept-batch 4;"),
        ("repeat-ramp", lambda d: [r["server"] for row in d["rounds"] for r in row], "accept-batch 4"),
        ("latency-compare", lambda d: [d["runs"][1]["server"]], "no work, accept-batch 4 (reuseport);"),
        ("latency", lambda d: [d["server"]], "accept-batch"),  # blocking: it reads no cap, none said
        ("reload", lambda d: [r["server"] for r in d["runs"][1:]], "work 1 ms, accept-batch 4 (reuseport), 16 in"),
    ],
)
def test_the_pictures_footers_say_it_too(name: str, servers: Any, said: str) -> None:
    pytest.importorskip("matplotlib")
    from accept_order.experiments.documents import plot_document

    doc: dict[str, Any] = json.loads((GOLDEN / f"{name}.json").read_text())
    kind = doc["kind"]  # a repeat's is 'repeat'
    assert said not in plot_document(kind, doc).get_supxlabel()
    for server in servers(doc):
        server["accept_batch"] = 4
    footer = plot_document(kind, doc).get_supxlabel()
    assert (said not in footer) if name == "latency" else (said in footer), footer


def test_a_sweep_picture_leaves_its_caps_to_its_axis() -> None:
    pytest.importorskip("matplotlib")
    from accept_order.experiments.documents import plot_document

    doc = json.loads((GOLDEN / "sweep.json").read_text())  # caps 1 and 0
    assert "accept-batch" not in plot_document("sweep", doc).get_supxlabel()
