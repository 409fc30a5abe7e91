"""bpftrace refused in a user namespace says so, not locked memory.

Root of a user namespace (`unshare -Ur`, a rootless container) holds every capability as that namespace's, which
the kernel does not count for loading a tracing program or raising a hard limit: bpftrace warned of RLIMIT_MEMLOCK
beside 'failed to create map: Operation not permitted', and `latency --attach` of a server in the namespace read
'(bpftrace could not raise its locked-memory limit, `ulimit -Hl` 8192 KB: kernels before 5.11 charge eBPF maps
against it; this process may raise it, yet bpftrace's stayed low: ...)', where no limit would have let it load.
Asked with the namespace's uid map given, and for real under `unshare -Ur` (the same program loads outside it)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from bpftrace_refusal import EVERY_CAPABILITY, MAP, WARNING, accept_counter_word

from accept_order.core import capabilities
from accept_order.core.capabilities import in_user_namespace
from accept_order.probes.bpftrace_messages import not_loaded_hint

SAID = "loading a tracing program needs CAP_BPF with CAP_PERFMON, or CAP_SYS_ADMIN in the initial user namespace: "


def _in(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, uid_map: str) -> None:
    """This process as root holding every capability, its user namespace mapping uids as `uid_map` says."""
    path = tmp_path / "uid_map"
    path.write_text(uid_map)
    monkeypatch.setattr(capabilities, "UID_MAP", str(path))
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(capabilities, "effective_capabilities", lambda: EVERY_CAPABILITY)


@pytest.mark.parametrize("uid_map", ["         0          0          1\n", "0 100000 65536\n"])
def test_a_user_namespaces_root_is_told_its_capabilities_do_not_count(
    uid_map: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _in(monkeypatch, tmp_path, uid_map)
    assert in_user_namespace()
    hint = not_loaded_hint(WARNING + MAP)
    assert hint.startswith(f" ({SAID}this process's are a user namespace's") and "locked-memory" not in hint, hint


def test_the_initial_namespaces_root_is_told_of_locked_memory_as_before(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Holding them in the initial namespace, the kernel refused something else: a limit (before 5.11) may be it."""
    _in(monkeypatch, tmp_path, "         0          0 4294967295\n")
    assert not in_user_namespace()
    hint = not_loaded_hint(WARNING + MAP)
    assert "could not raise its locked-memory limit" in hint and "namespace" not in hint, hint


def test_bpftrace_refused_in_a_user_namespace_for_real_says_so() -> None:
    if os.geteuid() != 0 or in_user_namespace():
        pytest.skip("needs root of the initial user namespace, to make another")
    if not (shutil.which("bpftrace") and shutil.which("unshare")):
        pytest.skip("needs bpftrace and unshare")
    made = subprocess.run(["unshare", "-Ur", "true"], capture_output=True, text=True, timeout=60)
    if made.returncode != 0:
        pytest.skip(f"no user namespace can be made here: {made.stderr.strip()}")
    held = accept_counter_word()
    if held[0] != "True":
        pytest.skip(f"bpftrace does not load here: {held}")
    available, why = accept_counter_word("unshare", "-Ur")
    assert available == "False", why
    assert "Operation not permitted" in why or "Permission denied" in why, why  # bpftrace's own words
    assert f"({SAID}this process's are a user namespace's" in why and "locked-memory" not in why, why
