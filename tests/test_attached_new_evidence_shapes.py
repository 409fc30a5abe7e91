"""The evidence an attached latency run added (fa597ad's accept_counts.empty, 7368337's cpu_waits, 655b140's
listeners_watched.young) is checked as a file is read, as the fields beside it are: a file that holds something
else there is refused in one line, never a traceback, and merge does not add it up.

Unchecked, 'accept-order merge' of two files, one whose accept_counts.empty held {"10888": "lots"}, ended in a
TypeError traceback (merge_evidence adds the empties); one whose cpu_waits.run_s was true was merged into
run_s 1.11 s (true taken as 1 s) and a negative waited_s kept; a `young` naming worker 5 of 2 was shown as
read."""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from test_attached_listener_queues_model import attached

from accept_order.experiments.latency.model_check import predict
from accept_order.results import envelope


def _document(started_at: str) -> dict[str, Any]:
    """An attached run of one shared listener, its accepts counted by the kernel and its CPU waits read."""
    result = attached({"listeners": 1, "workers": [[0], [], [], []], "held": [[0]] * 4, "young": [1]}, rows=1)
    evidence = {
        **result.evidence,
        "accept_counts": {"available": True, "why": "bpftrace", "counts": {"4243": 1000}, "empty": {"4243": 0}},
        "cpu_waits": {"run_s": 0.1, "waited_s": 0.3},
    }
    document = replace(result, evidence=evidence, model=predict(result)).to_dict()
    document["environment"]["started_at"] = started_at
    return document


BAD = [
    (("accept_counts", "empty"), {"4243": "lots"}, "evidence.accept_counts.empty.4243: expected a non-negative int"),
    (("cpu_waits", "run_s"), True, "evidence.cpu_waits.run_s: expected a non-negative number, got true"),
    (("cpu_waits", "waited_s"), -5, "evidence.cpu_waits.waited_s: expected a non-negative number"),
    (("cpu_waits",), [1, 2], "evidence.cpu_waits: expected an object"),
    (("listeners_watched", "young"), [0, 5], "evidence.listeners_watched.young[1]: is 5, but there are 4 workers"),
]


@pytest.mark.parametrize(("where", "value", "said"), BAD, ids=[".".join(b[0]) for b in BAD])
def test_a_file_with_bad_new_evidence_is_refused_in_one_line(
    tmp_path: Path, where: tuple[str, ...], value: Any, said: str
) -> None:
    good, other, bad = tmp_path / "good.json", tmp_path / "other.json", tmp_path / "bad.json"
    envelope.save(good, "latency", _document("2026-11-28T05:00:00+00:00"))
    envelope.save(other, "latency", _document("2026-11-28T05:01:00+00:00"))
    merged = run_cli(["merge", str(good), str(other), "--json", str(tmp_path / "merged.json")], columns=400)
    assert merged.exit_code == 0, merged.output  # the two good files merge: the refusal below is the bad field's
    document = _document("2026-11-28T05:02:00+00:00")
    spot = document["evidence"]
    for key in where[:-1]:
        spot = spot[key]
    spot[where[-1]] = copy.deepcopy(value)
    envelope.save(bad, "latency", document)
    for command in (["show", str(bad)], ["merge", str(good), str(bad), "--json", str(tmp_path / "m.json")]):
        refused = run_cli(command, columns=400)
        assert refused.exit_code == 1, (command, refused.output)
        assert said in refused.output, refused.output
        assert "Traceback" not in refused.output and len(refused.output.strip().splitlines()) == 1, refused.output
