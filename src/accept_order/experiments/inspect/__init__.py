"""`inspect`: who serves, its listeners, how each worker waits, the mechanism in effect and what changes it."""
