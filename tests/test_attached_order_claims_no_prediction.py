"""run --attach on a hand-started nginx (--protocol http, 8 connections): 'Verdict: an order like
the-previous-worker-again (the mechanism predicts none)', beside 'Why: a server this tool did not start: its
accept mechanism is whatever it was configured with'. The run does not know the mechanism, so it cannot say
what it predicts; 'predicts none' is a herd's claim (a mode this tool runs). It says it is not known."""

from __future__ import annotations

from accept_order.analysis.seen import like, unpredicted_pattern

UNKNOWN = "(the server's mechanism is not known to this run)"


def test_an_attached_servers_order_claims_no_prediction() -> None:
    herd, _ = unpredicted_pattern("fifo", None, False, 1e-5)  # a herd mode: its mechanism predicts no order
    assert herd.endswith("(the mechanism predicts none)"), herd
    attached, figures = unpredicted_pattern("lock-holder", None, False, 1 / 150, known=False)
    assert attached.startswith("an order like ") and attached.endswith(UNKNOWN), attached
    assert "1 time in 150" in figures, figures
    assert like("runs of 3 per worker", None, known=False) == f"an order like runs of 3 per worker {UNKNOWN}"
