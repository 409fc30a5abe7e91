"""The settings only some server kinds read (ServerSpec's policy, mutex_delay_ms and maxconn), each declared once,
beside the spec that holds them: a kind names those it reads in its `options` (core/kinds.py ServerKind), and the
command line makes its flags from `DECLARED` without importing a kind (issue 30: start-up; a `run` of the built-in
workers imports no launched kind's module). A server or mode that does not read one refuses it when set, naming who
reads it (servers/kind_option_checks.py): each says so here, without importing a kind. Adding one: a ServerSpec
field, its KindOption here (whose, and the modes that read it), and the kinds that read it naming it;
tests/test_registry.py checks that `DECLARED` is every kind's, in the registry's order.
"""

from __future__ import annotations

from .kinds import KindOption
from .spec import DEFAULT_KIND, MAX_GAP_MS

POLICIES = ("round-robin", "least-busy")  # fd-pass: how the acceptor picks the worker it hands a connection to

# The built-in fd-pass mode's (servers/modes/fd_pass.py): no other mode of the built-in workers hands connections on.
POLICY = KindOption(
    "policy",
    "--policy",
    "fd-pass: which worker the acceptor hands each connection to.",
    choices=POLICIES,
    whose="the built-in fd-pass mode's",
    modes=("fd-pass",),
)

# nginx's accept_mutex_delay, read by the built-in accept-mutex mode and by nginx's own (servers/launched/nginx.py):
# nginx's other modes run with accept_mutex off, where the delay is never waited.
MUTEX_DELAY = KindOption(
    "mutex_delay_ms",
    "--mutex-delay",
    "accept-mutex: how long a worker without the lock waits before trying again (nginx's accept_mutex_delay).",
    low=1,
    high=MAX_GAP_MS,
    duration=True,
    whose="the accept-mutex mode's (the built-in workers' and nginx's)",
    modes=("accept-mutex",),
)

# HAProxy's maxconn (servers/launched/haproxy.py), in each of its modes.
MAXCONN = KindOption(
    "maxconn",
    "--maxconn",
    "haproxy: connections it holds at once; the excess waits in the listen queue (0: its default).",
    low=0,
    high=10_000_000,
    whose="HAProxy's",
    hints=(
        (
            DEFAULT_KIND,
            "--accept-batch caps what the built-in workers hold: at most that many connections each "
            "(--accept-batch 1: as many as there are workers)",
        ),
    ),
)

# Every kind's, each once, in the order of the registry's kinds (servers/registry.py) and of each kind's `options`:
# the order `--help` lists them in.
DECLARED: tuple[KindOption, ...] = (POLICY, MUTEX_DELAY, MAXCONN)
