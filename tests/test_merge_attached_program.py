"""merge keeps an attached server's program (evidence `program`) only where every file names the same one.

Two 'latency --attach <lighttpd> --pool -c 8 --requests-per-connection 0 -n 1000' files (Debian's lighttpd 1.4.69,
server.max-keep-alive-requests 20; load 7, Linux 6.18, 2 vCPUs), the second's program edited to nginx or left out
(a file from before it was recorded): merged, the file kept the first file's program, so the merged report's
words on the reopened pool hung on the files' order ('as lighttpd's server.max-keep-alive-requests can' one way,
'as nginx's keepalive_requests or keepalive_time can' or the general sentence the other)."""

from __future__ import annotations

from typing import Any

from accept_order.results.merge_evidence import add_evidence

LIGHTTPD = {"pid": 14881, "name": "lighttpd", "recognised": "lighttpd"}
NGINX = {"pid": 14881, "name": "nginx", "recognised": "nginx"}


def _merged(a: dict[str, Any] | None, b: dict[str, Any] | None) -> Any:
    first = {"program": a} if a is not None else {}
    second = {"program": b} if b is not None else {}
    return add_evidence(dict(first), second, ("h", "h")).get("program")


def test_the_same_program_in_every_file_is_kept() -> None:
    assert _merged(LIGHTTPD, dict(LIGHTTPD)) == LIGHTTPD


def test_a_program_not_in_every_file_alike_is_dropped_whatever_the_order() -> None:
    for a, b in ((LIGHTTPD, NGINX), (NGINX, LIGHTTPD), (LIGHTTPD, None), (None, LIGHTTPD)):
        assert _merged(a, b) is None, (a, b)


LANDED = "found where a connection made to it before the load landed, DNATed to 10.176.172.10:39223"


def test_how_a_targets_counters_were_found_is_kept_only_where_every_file_says_it() -> None:
    """evidence.counters_landed (the --target's counters found by a connection of the tool's own) followed the first
    file as the program did: a merge of a file that made that connection with one that made none said it of both."""
    for a, b in ((LANDED, None), (None, LANDED), (LANDED, LANDED + " elsewhere")):
        first = {"counters_landed": a} if a is not None else {}
        second = {"counters_landed": b} if b is not None else {}
        assert "counters_landed" not in add_evidence(dict(first), second, ("h", "h")), (a, b)
    kept = add_evidence({"counters_landed": LANDED}, {"counters_landed": LANDED}, ("h", "h"))
    assert kept["counters_landed"] == LANDED
