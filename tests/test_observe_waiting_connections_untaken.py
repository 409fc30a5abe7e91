"""Apache event (3 children of 4 threads, MaxRequestWorkers 12) after wrk -c12 -H 'Connection: close' stops
accepting for seconds ('server reached MaxRequestWorkers' in its error log): ss -ltn showed Recv-Q 25 at every
look, its listener threads asleep in epolls without the listener, its workers in futex, nothing running. observe
said 'no connection was accepted in 3.0 s: the server got no new connections while observed' (its own queue line
below: 'at most 25 waiting, 25.0 on average'), and inspect 'no thread waits on a listener at this moment (all
busy?)' of a server where none was busy."""

from __future__ import annotations

from observe_result_made import result

from accept_order.experiments.observe.verdict import headline


def test_observe_says_connections_waited_where_none_was_taken() -> None:
    stalled = result([0, 0, 0], queue_max=25, queue_mean=25.0, queue_samples=30, wall_s=3.0)
    said = headline(stalled)
    assert said.startswith("no connection was accepted in 3.0 s, though the listen queue held up to 25 (25.0 on"), said
    assert "got no new connections" not in said and "none was taken" in said, said
    quiet = result([0, 0, 0], queue_max=0, queue_mean=0.0, wall_s=3.0)
    assert headline(quiet) == "no connection was accepted in 3.0 s: the server got no new connections while observed"
