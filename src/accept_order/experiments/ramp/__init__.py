"""The breaking point: the load stepped up until errors appear or the tail passes a bound, and why."""
