"""Review RP of b90f33c: the kernel counters of files from several hosts, added by merge, and whose they are."""

from __future__ import annotations

from typing import Any


def test_counters_added_over_hosts_private_namespaces_are_not_said_to_include_other_traffic() -> None:
    """Review RP of b90f33c: two hosts' private namespaces read 'may include other TCP traffic there', which a
    private namespace (each file's run's own) cannot; a shared one may, as before."""
    from accept_order.render.evidence import counters_text

    evidence: dict[str, Any] = {
        "counters_available": True,
        "counters": {"TcpExtListenOverflows": 5},
        "counters_hosts": ["other", "vm"],
        "shared_namespace": False,
    }
    private = counters_text(evidence).plain
    assert "added over 2 hosts' private network namespaces: other, vm; these runs' traffic only" in private, private
    assert "other TCP traffic" not in private
    shared = counters_text(evidence | {"shared_namespace": True}).plain
    assert "added over 2 hosts' shared network namespaces: other, vm; may include other TCP traffic there" in shared
