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
