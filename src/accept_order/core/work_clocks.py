"""The clocks a server's --work can spin on, as saved in a result's evidence ('work_clock').

Here, at the bottom, because the server that spins (servers/launched/haproxy.py) writes the name and the reports
that compare servers' work (experiments/latency/work_share.py) read it: neither may import the other's floor.
"""

from __future__ import annotations

THREAD_CLOCK = "thread"  # the spinning thread's own CPU
PROCESS_CLOCK = "process"  # every thread's: HAProxy without Debian's lua-posix
