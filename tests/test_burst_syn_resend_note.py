"""Review R5 of the SYN sentence (09ac5c4, 194d672): it says only what the numbers carry. A host-wide
TCPSynRetrans is anyone's (this machine's other tests sent 32,509 SYNs again during one 3,000-connection run),
and a tail of 1 s or more need not be set-up at all: gunicorn 27's sync worker waiting 2 s for a client's FIN put
connections at 2, 4 and 6 s with no SYN of the run sent again. So a host-wide count, however small, makes the
kernel's set-up a 'may', and the model names the timer beside other processes' CPU, not instead of it; only the
run's own namespace's count says 'is'."""

from __future__ import annotations

from test_syn_retrans_sentence import evidence, run_of, text_of

from accept_order.experiments.latency.model_verdict import model_line
from accept_order.experiments.latency.report import latency_report

# a server that stalls: 3,000 connections, most in 4 ms, 8 held 2, 4 or 6 s behind a lingering worker
STALLED = [4000] * 2992 + [2_010_000] * 4 + [4_020_000] * 3 + [6_030_000]
# the same, with 1 in 30 held, so that the p99 is one of them
P99_STALLED = [4000] * 2900 + [2_010_000] * 100


def test_a_few_host_wide_retransmissions_make_the_set_up_a_may() -> None:
    text = text_of(latency_report(run_of(STALLED, evidence(40))))  # 40 sent again host-wide, by other tests
    assert "8 connections of 3,000 took 1 s or more, and 40 SYNs or SYN-ACKs were sent again" in text, text
    assert "so that part of the tail may be the kernel's connection set-up" in text, text
    assert "most likely" not in text and "tail is the kernel's" not in text, text


def test_the_model_keeps_other_processes_cpu_beside_a_host_wide_count() -> None:
    line = model_line([run_of(P99_STALLED, evidence(150))]) or ""
    assert "the kernel's 1 s retransmission timer may be part of it" in line, line
    assert "not queueing" not in line, line
    assert "other processes used 96% of the CPUs" in line, line


def test_fewer_of_the_runs_own_than_slow_ones_are_counted_in_the_plural() -> None:
    own = text_of(latency_report(run_of(STALLED, evidence(3, private=True))))
    assert "so up to 3 of them are the kernel's connection set-up" in own, own
    one = text_of(latency_report(run_of(STALLED, evidence(1, private=True))))
    assert "so up to 1 of them is the kernel's connection set-up" in one, one
