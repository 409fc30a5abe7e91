"""herd --server haproxy (and h2o) read 'not measured (no context-switch counts or nothing served)' beside its
own sleeps column (83) and 20 of 20 served: their threads also sleep between a connection's reads, so the sleeps
were counted but say nothing of wakeups (ModeInfo.switches_are_wakeups). The verdict now says that."""

from __future__ import annotations

from accept_order.analysis.herd import HerdRow


def _row(voluntary: int | None, served: int) -> HerdRow:
    return HerdRow(
        mode="threads",
        workers=4,
        served=served,
        failed=0,
        wakeups=None,
        accepts=None,
        empty=None,
        max_batch=None,
        voluntary=voluntary,
        involuntary=None if voluntary is None else 10,
        cpu_s=0.01,
        cpu_s_per_worker=(0.0025,) * 4,
        woken_per_connection=None,
        herds=True,
    )


def test_sleeps_counted_but_not_wakeups_are_said_so() -> None:
    verdict = _row(83, 20).verdict()
    assert "no context-switch counts" not in verdict
    assert verdict == "not measured: its workers sleep for more than connections (sleeps are not wakeups)"


def test_no_counts_or_nothing_served_keep_their_words() -> None:
    assert _row(None, 20).verdict() == "not measured (no context-switch counts or nothing served)"
    assert _row(83, 0).verdict() == "not measured (no context-switch counts or nothing served)"
