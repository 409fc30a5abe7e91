"""The kept table's share, where the kernel counted the connections (the replies name no worker), says it is theirs.

'latency --attach <gunicorn> --port P --protocol http --pool -c 8 --requests-per-connection 0' at gunicorn 27
(gthread, 2 workers; load 4, Linux 6.18.44, 2 vCPUs) printed 'share' 12.5% and 87.5% beside 'requests' 3,839 and
8,938 (30% and 70%, its access log's by pid): the share is of the connections each accepted (kept_table), and its
line named the accepted column and the requests but not the share. A launched server's share, of the requests the
replies named, says nothing new."""

from __future__ import annotations

from test_attached_pool_counts_connections import attached, text
from test_small_sentences_held_nothing import pool_run

from accept_order.experiments.latency.kept_report import kept_parts

SAID = "share: of those connections, not of the requests; "


def test_an_attached_pools_share_is_of_the_connections() -> None:
    said = text(kept_parts(attached([5, 0, 0, 11])), width=400)
    assert f"accepted: the connections the worker accepted (counted by the kernel); {SAID}" in said, said
    assert "31.2%" in said and "68.8%" in said, said  # 5 and 11 of the 16 accepted


def test_a_launched_pools_share_is_of_the_requests_and_says_nothing_new() -> None:
    said = text(kept_parts(pool_run("epoll", (7, 1), 9000)), width=400)
    assert SAID not in said and "87.5%" in said, said  # 700 of the 800 requests the replies named
