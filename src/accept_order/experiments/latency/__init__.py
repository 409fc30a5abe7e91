"""Latency under a closed-loop load: `latency` (one run), `latency --modes` (latency-compare: one per mode)
and `sweep` (one per cap on the connections accepted per wakeup)."""
