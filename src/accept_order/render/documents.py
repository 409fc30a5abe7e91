"""Saved documents -> renderables, one function per result kind (listed in render.RENDERERS)."""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType

from ..results.herd import HerdResult
from ..results.latency import LatencyResult
from ..results.records import RunResult, ServeResult
from .herd import herd_report
from .latency import compare_report, latency_report, sweep_report
from .run import compare_table, run_report, serve_report


def _runs(doc: dict[str, Any]) -> list[dict[str, Any]]:
    runs = doc["runs"]
    if not isinstance(runs, list):
        raise TypeError("'runs' is not a list")
    return runs


def _skipped(doc: dict[str, Any]) -> dict[str, str]:
    skipped = doc.get("skipped", {})
    if not isinstance(skipped, dict) or not all(isinstance(v, str) for v in skipped.values()):
        raise TypeError("'skipped' is not a map of mode to reason")
    return skipped


def run_document(doc: dict[str, Any]) -> RenderableType:
    return run_report(RunResult.from_dict(doc))


def compare_document(doc: dict[str, Any]) -> RenderableType:
    return compare_table([RunResult.from_dict(r) for r in _runs(doc)], _skipped(doc))


def herd_document(doc: dict[str, Any]) -> RenderableType:
    return herd_report(HerdResult.from_dict(doc))


def latency_document(doc: dict[str, Any]) -> RenderableType:
    return latency_report(LatencyResult.from_dict(doc))


def latency_compare_document(doc: dict[str, Any]) -> RenderableType:
    return compare_report([LatencyResult.from_dict(r) for r in _runs(doc)], _skipped(doc))


def sweep_document(doc: dict[str, Any]) -> RenderableType:
    return sweep_report([LatencyResult.from_dict(r) for r in _runs(doc)])


def serve_document(doc: dict[str, Any]) -> RenderableType:
    return serve_report(ServeResult.from_dict(doc))


def reload_document(doc: dict[str, Any]) -> RenderableType:
    from ..results.reload import ReloadResult
    from .reload import reload_report

    return reload_report(ReloadResult.from_dict(doc))


def burst_document(doc: dict[str, Any]) -> RenderableType:
    from ..results.burst import BurstResult
    from .burst import burst_report

    return burst_report(BurstResult.from_dict(doc))


def ramp_document(doc: dict[str, Any]) -> RenderableType:
    from ..results.ramp import RampResult
    from .ramp import ramp_report

    return ramp_report(RampResult.from_dict(doc))


def repeat_document(doc: dict[str, Any]) -> RenderableType:
    from .repeat import LATENCY_KINDS, repeat_report

    of = doc["of"]
    build = LatencyResult.from_dict if of in LATENCY_KINDS else RunResult.from_dict
    rounds = [[build(r) for r in row] for row in doc["rounds"]]
    cpus = rounds[0][0].environment.cpu_count if rounds and rounds[0] else 1
    return repeat_report(of, rounds, _skipped(doc), doc.get("machine", {}), cpus)
