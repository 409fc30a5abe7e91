"""Files merged one after the other (not --concurrent) keep no host's end: each was timed from its own load's start.

'accept-order merge' of a 'latency --clients c1,c2,c3 -n 3000' file and a 'latency --clients c1,c2 -n 3000' file
said 'Straggler: c1 ended 134 ms after the first host to end (c3); the load's last 134 ms were driven by fewer
hosts': c3 was only in the first, shorter session, c1's end came from the second, and nothing ran after c3 ended.
"""

from __future__ import annotations

from test_clients_report import host, notes

from accept_order.core.host_outcome import extended


def test_hosts_of_sessions_one_after_the_other_name_no_straggler() -> None:
    first = (host("c1", ended_s=0.188), host("c2", ended_s=0.185), host("c3", ended_s=0.181))
    second = (host("c1", ended_s=0.315), host("c2", ended_s=0.309))
    merged = extended(first, second, concurrent=False)
    assert [h.destination for h in merged] == ["c1", "c2", "c3"]
    assert [h.ended_s for h in merged] == [None, None, None]
    assert [h.served for h in merged] == [(200,), (200,), (100,)]  # the counts still add
    assert not [line for line in notes(list(merged), wall_s=0.5) if line.startswith("Straggler:")]


def test_hosts_of_sessions_without_common_hosts_name_no_straggler() -> None:
    merged = extended((host("c1", ended_s=0.1),), (host("c2", ended_s=0.9),), concurrent=False)
    assert not [line for line in notes(list(merged), wall_s=1.0) if line.startswith("Straggler:")]


def test_hosts_of_two_files_at_once_name_no_straggler() -> None:
    """Each file's ends are from its own load's start, and two runs' starts are known to the second only: c2's
    300 ms after c1 is as much the gap between the two coordinators' starts as its own end."""
    merged = extended((host("c1", ended_s=1.0),), (host("c2", ended_s=1.3),), concurrent=True)
    assert [h.ended_s for h in merged] == [None, None]
    assert not [line for line in notes(list(merged), wall_s=1.3) if line.startswith("Straggler:")]


def test_one_files_hosts_at_once_with_a_load_from_here_keep_their_ends_and_the_straggler() -> None:
    merged = extended((host("c1", ended_s=1.0), host("c2", ended_s=1.3)), (), concurrent=True)
    assert [h.ended_s for h in merged] == [1.0, 1.3]
    [line] = [line for line in notes(list(merged), wall_s=1.3) if line.startswith("Straggler:")]
    assert line.startswith("Straggler: c2 ended 300 ms after the first host to end (c1)"), line
