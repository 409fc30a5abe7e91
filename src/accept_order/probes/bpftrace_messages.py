"""Reading what bpftrace says on stderr (its first real error, past a harmless warning) and giving it the locked
memory it may need: apart from probes/accepts.py, which runs it."""

from __future__ import annotations

import os
import resource

from ..core.capabilities import ADMIN, BPF, PERFMON, RESOURCE, holds, in_user_namespace, what_would_let_it

# set in bpftrace's environment, it prints this name once every probe is attached (accepts.py waits for it)
ATTACHED_ENV = "__BPFTRACE_NOTIFY_PROBES_ATTACHED"
REFUSED = ("not permitted", "permission denied")  # how bpftrace says the kernel refused it (EPERM, EACCES)
NEEDS = "loading a tracing program needs CAP_BPF with CAP_PERFMON, or CAP_SYS_ADMIN"
# a user namespace's capabilities are its own: the kernel loads a tracing program for the initial one's only
OUTSIDE = (
    "this process's are a user namespace's (`unshare -U`, a rootless container), which the kernel does not count: "
    "run this tool outside it"
)


def first_error_line(stderr: bytes) -> str:
    """The first line of bpftrace's stderr that says something: it warns that it could not raise
    RLIMIT_MEMLOCK on every start here (harmless: the kernel charges BPF memory to the cgroup now), and
    that warning would otherwise hide the real error."""
    for raw in stderr.decode(errors="replace").splitlines():
        line = raw.strip()
        if line and "RLIMIT_MEMLOCK" not in line and ATTACHED_ENV not in line:
            return line
    return "no message"


def not_loaded_hint(stderr: bytes) -> str:
    """Why a program may not have loaded: a capability this process lacks, or holds in a user namespace only,
    where the kernel refused it (see `capability_hint`), else low locked memory where bpftrace warned that it could
    not raise RLIMIT_MEMLOCK and its error is one a low locked-memory limit causes (kernels before 5.11 charge eBPF
    maps against it; later ones charge the cgroup, and the warning is harmless): "" otherwise."""
    if lacking := capability_hint(stderr):
        return lacking
    if b"RLIMIT_MEMLOCK" not in stderr:
        return ""
    line = first_error_line(stderr).lower()
    if line != "no message" and not any(word in line for word in ("map", "permitted", "memory")):
        return ""
    # bpftrace ran with the hard limit (raise_memlock, in its child): the soft one here is not what it had, and
    # raising it would change nothing
    hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]
    limit = "unlimited" if hard == resource.RLIM_INFINITY else f"{hard // 1024} KB"
    raise_it = "raise the hard limit, limits.conf's memlock or a container's --ulimit memlock"
    return (
        f" (bpftrace could not raise its locked-memory limit, `ulimit -Hl` {limit}: kernels before 5.11 charge "
        f"eBPF maps against it; {what_would_let_it(RESOURCE, otherwise=raise_it)})"
    )


def capability_hint(stderr: bytes) -> str:
    """What this process lacks where the kernel refused bpftrace (REFUSED) and loading a tracing
    program needs what it does not hold: CAP_BPF with CAP_PERFMON, or CAP_SYS_ADMIN. A root without them (a
    container's, `capsh --drop`) also lacks CAP_SYS_RESOURCE, so bpftrace warns of RLIMIT_MEMLOCK too, and the
    locked memory was blamed ('failed to create map: Operation not permitted (bpftrace could not raise its
    locked-memory limit ...)') where no limit would have let it. So was it for a root of a user namespace (`unshare
    -Ur`, a rootless container), which holds them all as that namespace's: the kernel counts the initial one's only.
    "" where it holds them, or the error is another."""
    line = first_error_line(stderr).lower()  # EPERM for a map or a program, EACCES for perf_event_open
    if not any(word in line for word in REFUSED):
        return ""
    if in_user_namespace():
        return f" ({NEEDS} in the initial user namespace: {OUTSIDE})"
    if holds(ADMIN) or (holds(BPF) and holds(PERFMON)):
        return ""
    if os.geteuid() != 0:
        said = what_would_let_it(ADMIN)  # 'run as root': bpftrace itself runs only as root
    else:
        names = [needs.name for needs in (BPF, PERFMON, ADMIN) if not holds(needs)]
        said = f"this root lacks {', '.join(names[:-1])} and {names[-1]}"
    return f" ({NEEDS}: {said})"


def raise_memlock() -> None:
    """Locked memory unlimited for bpftrace (root with CAP_SYS_RESOURCE may), else at least up to the hard
    limit: kernels before 5.11 charge eBPF maps against RLIMIT_MEMLOCK, and bpftrace's own attempt to raise
    it fails under a low `ulimit -l` (it then warns "couldn't set RLIMIT_MEMLOCK")."""
    hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]
    for limits in ((resource.RLIM_INFINITY, resource.RLIM_INFINITY), (hard, hard)):
        try:
            resource.setrlimit(resource.RLIMIT_MEMLOCK, limits)
            return
        except (OSError, ValueError):
            continue
