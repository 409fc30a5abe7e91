"""A --target at this namespace's own (non-loopback) address makes no connection of its own to find where its
connections land unless a nat chain or table here could send them on (probes/nat_rules.py). With conntrack built
into the kernel, as here, every such --target made one: the server counted one more connection than the load
made ('run --target 192.0.2.2:P -n 10' at serve: its tally 11) and the client's kernel counters read
'TCPAbortOnClose +1', the probe's.

Each case runs in a namespace of its own (so no other test's nft table is in it), the tool's locate and a listener
that never accepts in one process there; the witness is the listener's accept queue: a connection made to it is
queued before connect() returns, so a non-blocking accept right after locate finds it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest
from waiting import OutputReader

from accept_order.probes.evidence import PRIVATE_ENV

ADDRESS = "10.77.91.1"  # the namespace's own address, on its loopback device: not a loopback address

ASK = f"""
import json, socket
from accept_order.probes.address_netns import locate
with socket.create_server(({ADDRESS!r}, 0), backlog=8) as listener:
    where = locate({ADDRESS!r}, listener.getsockname()[1])
    listener.setblocking(False)
    try:
        listener.accept()[0].close()
        queued = 1
    except BlockingIOError:
        queued = 0
print(json.dumps({{"ours": where.ours, "landed": where.landed, "queued": queued}}))
"""


def _run(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=60).stdout


@pytest.fixture
def namespace() -> Iterator[str]:
    if subprocess.run(["nft", "--version"], capture_output=True).returncode != 0:
        pytest.skip("nft is not installed (Debian's nftables)")
    name = f"aonp{os.getpid()}"
    _run("ip", "netns", "add", name)
    try:
        _run("ip", "-n", name, "link", "set", "lo", "up")
        _run("ip", "-n", name, "addr", "add", f"{ADDRESS}/32", "dev", "lo")
        conntrack = "test -e /proc/sys/net/netfilter/nf_conntrack_count && echo y"
        if _run("ip", "netns", "exec", name, "sh", "-c", conntrack):
            yield name
        else:
            pytest.skip("no conntrack in this kernel: no connection is made to find out, nat chain or not")
    finally:
        subprocess.run(["ip", "netns", "delete", name], timeout=60, capture_output=True)


def _locate_in(name: str) -> dict[str, int]:
    return dict(json.loads(_run("ip", "netns", "exec", name, sys.executable, "-c", ASK)))


def _nat_chain(name: str) -> None:
    """An nft nat chain in the namespace's output hook, with no rule in it: nothing is rewritten."""
    _run("ip", "netns", "exec", name, "nft", "add", "table", "ip", "aonp")
    _run(
        "ip",
        "netns",
        "exec",
        name,
        "nft",
        "add",
        "chain",
        "ip",
        "aonp",
        "out",
        "{ type nat hook output priority -100 ; }",
    )


def _latency_beside_serve(name: str, n: int, declared: bool = False) -> tuple[int, str]:
    """`latency --target ADDRESS:P -n n` in the namespace at serve there: (what serve's tally says its worker
    accepted, once SIGTERM stops it; the report, its whitespace folded). The latency's environment declares its
    namespace private (PRIVATE_ENV=1) where `declared`, and otherwise not, whatever this worker's holds."""
    env = {k: v for k, v in os.environ.items() if k != PRIVATE_ENV} | ({PRIVATE_ENV: "1"} if declared else {})
    argv = ["ip", "netns", "exec", name, sys.executable, "-m", "accept_order", "serve", "-w", "1", "--host", ADDRESS]
    serve = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    reader = OutputReader(serve.stdout)  # type: ignore[arg-type]
    try:
        port = reader.wait_for(r"listening on \S+:(\d+)", 60).group(1)
        argv = ["ip", "netns", "exec", name, sys.executable, "-m", "accept_order", "latency"]
        done = subprocess.run(
            [*argv, "--target", f"{ADDRESS}:{port}", "-n", str(n), "-c", "2", "-w", "1"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        serve.terminate()
        serve.wait(60)
    finally:
        serve.kill()
        serve.wait(60)
    row = re.search(r"^\s+0\s+\d+\s+\d+\s+\S+\s+\d+\s+(\d+)\s", reader.finish(30), re.MULTILINE)
    assert row is not None, reader.text
    return int(row.group(1)), " ".join(done.stdout.split())


def test_no_nat_here_no_connection_is_made(namespace: str) -> None:
    """conntrack loaded, no nat chain: located here, and the listener never saw a connection."""
    assert _locate_in(namespace) == {"ours": True, "landed": False, "queued": 0}


def test_a_nat_chain_here_has_one_made_and_found_here(namespace: str) -> None:
    """An nft nat chain in the output hook (no rule in it): NAT could send it on, so one connection tells; it
    lands on the listener here (this namespace's server ends, over sock_diag) and is queued there."""
    _nat_chain(namespace)
    assert _locate_in(namespace) == {"ours": True, "landed": True, "queued": 1}


SAID = "found where a connection made to it before the load landed"


def test_a_run_counts_what_the_server_counted_and_says_the_one_it_made(namespace: str) -> None:
    """The server's own tally is the witness: with no nat chain it accepted the run's 40 connections alone and the
    report says nothing of a connection of its own; with one, it accepted 41, and the counters line says so."""
    accepted, said = _latency_beside_serve(namespace, 40)
    assert accepted == 40 and SAID not in said, (accepted, said)
    _nat_chain(namespace)
    accepted, said = _latency_beside_serve(namespace, 40)
    assert (
        accepted == 41 and f"shared network namespace, may include other TCP traffic on this host; {SAID})" in said
    ), (
        accepted,
        said,
    )


def test_a_namespace_declared_private_says_the_one_it_made_too(namespace: str) -> None:
    """Where the namespace is declared the run's own (as reload's is), its counters line says the connection made
    to find where the load lands too: the server counted it beside the load's 40."""
    _nat_chain(namespace)
    accepted, said = _latency_beside_serve(namespace, 40, declared=True)
    private = f"private network namespace: this run's traffic only; declared by {PRIVATE_ENV}=1; {SAID})"
    assert accepted == 41 and private in said, (accepted, said)


ASK_CONNTRACK = f"""
import json, socket
from pathlib import Path
from accept_order.probes import conntrack_entry, landing
with socket.create_server(({ADDRESS!r}, 18082)) as listener:
    with socket.create_connection(({ADDRESS!r}, 18081), 10) as client:
        mine, asked = client.getsockname()[:2], client.getpeername()[:2]
        table = Path("/proc/net/nf_conntrack").read_text()
        print(json.dumps([conntrack_entry.sent_to(mine, asked), landing.conntrack_destination(mine, asked, table),
                          conntrack_entry.sent_to((mine[0], mine[1] ^ 1), asked)]))
"""


def test_the_entry_asked_by_its_tuple_says_what_the_table_does(namespace: str) -> None:
    """A DNAT from port 18081 to 18082 of the namespace's address: the entry asked over ctnetlink by the connection's
    tuple names 18082, as the kernel's table (/proc/net/nf_conntrack) does; a tuple it has no entry for, none."""
    if _run("ip", "netns", "exec", namespace, "sh", "-c", "test -e /proc/net/nf_conntrack && echo y") == "":
        pytest.skip("this kernel keeps no /proc/net/nf_conntrack to check against")
    _nat_chain(namespace)
    rule = f"ip daddr {ADDRESS} tcp dport 18081 dnat to {ADDRESS}:18082"
    _run("ip", "netns", "exec", namespace, "nft", "add", "rule", "ip", "aonp", "out", *rule.split())
    said = json.loads(_run("ip", "netns", "exec", namespace, sys.executable, "-c", ASK_CONNTRACK))
    assert said == [[ADDRESS, 18082], [ADDRESS, 18082], None], said
