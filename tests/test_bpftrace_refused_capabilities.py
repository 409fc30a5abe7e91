"""bpftrace refused for a capability is told so, not blamed on locked memory.

A root without CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN (a container's, `capsh --drop`) usually lacks
CAP_SYS_RESOURCE too, so bpftrace warns that it could not raise RLIMIT_MEMLOCK beside its real error, and the
accept counts read 'ERROR: failed to create map: '@': Operation not permitted (bpftrace could not raise its
locked-memory limit, `ulimit -Hl` 8192 KB: kernels before 5.11 charge eBPF maps against it; this root lacks
CAP_SYS_RESOURCE: raise the hard limit, ...)' where no limit would have let it load. Asked with the capabilities
monkeypatched, and for real under setpriv (the same program loads beside it with them held)."""

from __future__ import annotations

import os
import resource
import shutil

import pytest
from bpftrace_refusal import EVERY_CAPABILITY, MAP, WARNING, accept_counter_word

from accept_order.core import capabilities
from accept_order.core.capabilities import ADMIN, BPF, PERFMON, RESOURCE, holds
from accept_order.probes import bpftrace_messages
from accept_order.probes.bpftrace_messages import not_loaded_hint

PERF = b"perf_event_open: Permission denied\n"  # holding CAP_BPF, without CAP_PERFMON
NEEDS = "loading a tracing program needs CAP_BPF with CAP_PERFMON, or CAP_SYS_ADMIN: "


def _as(monkeypatch: pytest.MonkeyPatch, euid: int, *dropped: capabilities.Capability) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: euid)
    caps = EVERY_CAPABILITY & ~sum(1 << c.bit for c in dropped) if euid == 0 else 0
    monkeypatch.setattr(capabilities, "effective_capabilities", lambda: caps)
    monkeypatch.setattr(bpftrace_messages, "in_user_namespace", lambda: False)  # the initial one, wherever it runs


def test_a_root_without_them_is_told_which_it_lacks(monkeypatch: pytest.MonkeyPatch) -> None:
    _as(monkeypatch, 0, BPF, PERFMON, ADMIN, RESOURCE)
    hint = not_loaded_hint(WARNING + MAP)
    assert hint == f" ({NEEDS}this root lacks CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN)", hint
    _as(monkeypatch, 0, PERFMON, ADMIN, RESOURCE)
    assert not_loaded_hint(WARNING + PERF) == f" ({NEEDS}this root lacks CAP_PERFMON and CAP_SYS_ADMIN)"
    assert not_loaded_hint(PERF) != ""  # holding CAP_SYS_RESOURCE, bpftrace warns of nothing: said all the same


def test_a_user_is_told_to_run_as_root(monkeypatch: pytest.MonkeyPatch) -> None:
    _as(monkeypatch, 1000)
    assert not_loaded_hint(WARNING + MAP) == f" ({NEEDS}run as root)"


@pytest.mark.parametrize("held", ["admin", "bpf and perfmon"])
def test_whoever_holds_them_is_told_of_locked_memory_as_before(held: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Holding what loading needs, the kernel refused something else: a limit (before 5.11) may be it."""
    _as(monkeypatch, 0, RESOURCE, *((BPF, PERFMON) if held == "admin" else (ADMIN,)))
    hint = not_loaded_hint(WARNING + MAP)
    assert "could not raise its locked-memory limit" in hint and "CAP_BPF" not in hint, hint
    assert not_loaded_hint(MAP) == ""  # nor is the limit blamed where bpftrace raised it


def _probe(*prefix: str) -> list[str]:
    """The accept counter's word from a child under a low `ulimit -l` (64 KiB, as the brief's), run under `prefix`."""

    def low_memlock() -> None:
        resource.setrlimit(resource.RLIMIT_MEMLOCK, (64 * 1024, 64 * 1024))

    return accept_counter_word(*prefix, preexec_fn=low_memlock)


def test_bpftrace_refused_for_real_names_the_capabilities() -> None:
    if os.geteuid() != 0 or not (holds(ADMIN) and holds(BPF) and holds(PERFMON)):
        pytest.skip("needs root holding CAP_SYS_ADMIN, CAP_BPF and CAP_PERFMON, to drop them")
    if not (shutil.which("bpftrace") and shutil.which("setpriv")):
        pytest.skip("needs bpftrace and setpriv")
    held = _probe()
    if held[0] != "True":
        pytest.skip(f"bpftrace does not load here with every capability: {held}")
    drop = "-bpf,-perfmon,-sys_admin"
    available, why = _probe("setpriv", f"--inh-caps={drop}", f"--bounding-set={drop}")
    assert available == "False", why
    # bpftrace's own words: the kernel refused it, and the hint says for what
    assert "Operation not permitted" in why or "Permission denied" in why, why
    assert f"({NEEDS}this root lacks CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN)" in why, why
    assert "locked-memory" not in why, why
