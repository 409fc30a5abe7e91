"""observe of HAProxy's threads gives Jain's index as the accepts', not as the fairness of what each thread serves.

HAProxy 2.6 (nbthread 4, one bind shared by its threads) under 'h2load -c 16 -m 10' read 'worker 1 (thread 29582)
accepted 100% of 16 connections', then that these are the threads' accepts, not the connections each serves, and the
threads' epolls 4, 4, 4, 4 at most, and then 'fairness: Jain's index 0.250 (1: even; 0.25: one took all)': the
evenness of the accepts under the word for the load's (load 4, Linux 6.18.44, 2 vCPUs). The file is a real observe's
(tests/data/observe_haproxy_threads_kept.json, as test_observe_haproxy_handed_on's); h2o's loops serve what they
accept, so the same file as h2o's keeps 'fairness:'."""

from __future__ import annotations

from test_observe_haproxy_handed_on import said


def test_haproxys_fairness_is_of_the_accepts() -> None:
    lines = said()
    fair = next(line for line in lines if "Jain's index" in line)
    assert fair.startswith("fairness of the accepts: Jain's index "), lines
    assert fair.endswith("; not of the connections each thread serves, handed on as said above"), fair
    assert not any(line.startswith("fairness: ") for line in lines), lines


def test_a_server_whose_threads_serve_what_they_accept_keeps_fairness() -> None:
    for changed in ({"program": "h2o", "recognised": "h2o"}, {"listeners": 4}):  # h2o; HAProxy with a bind a thread
        lines = said(**changed)
        fair = next(line for line in lines if "Jain's index" in line)
        assert fair.startswith("fairness: Jain's index ") and "of the accepts" not in fair, (changed, lines)
