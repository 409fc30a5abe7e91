"""`herd --repeat N`: its runs are sequential runs, repeated as compare's are (order/repeated.py)."""

from __future__ import annotations

from ..order.repeated import order_repeated

HERD_REPEATED = order_repeated("herd")
